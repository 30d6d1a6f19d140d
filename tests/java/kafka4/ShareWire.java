/*
 * Kafka 4.3's own bytes of the share group messages (KIP-932): the oracle of
 * tests/unit/protocol/test_share_group_apis.py, compiled there against kafka-clients 4.3.
 *
 * For each API key given, its request and its response at every version the jar's
 * generated *Data class supports, with every field of that version set to a value that is
 * not its default, found through the class's own schemas (SCHEMAS[version]: the field
 * names, tagged ones included) and its setters:
 *   int8 (counter % 100) + 1, int16/int32/int64 the counter, bool the opposite of its
 *   default, string "<snake_case_name><counter>", uuid Uuid(counter, counter),
 *   records the bytes of "records<counter>", arrays two elements, structs filled in turn;
 * the counter starts at 1 for each message and counts every value in schema order.
 * Each message is read back by the jar and must equal what was written.
 *
 * Usage: java ShareWire <api key> ...
 * Output: one line per message and version: <api key> <request|response> <version> <hex>
 */

import java.lang.reflect.Method;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.types.BoundField;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.TaggedFields;
import org.apache.kafka.common.record.internal.BaseRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.utils.ImplicitLinkedHashMultiCollection;

public final class ShareWire {
    private int counter;

    public static void main(String[] args) throws Exception {
        for (String arg : args) {
            ApiMessageType type = ApiMessageType.fromApiKey(Short.parseShort(arg));
            print(arg, "request", type::newRequest);
            print(arg, "response", type::newResponse);
        }
    }

    private static void print(String key, String kind, Supplier<ApiMessage> fresh) throws Exception {
        ApiMessage any = fresh.get();
        for (short v = any.lowestSupportedVersion(); v <= any.highestSupportedVersion(); v++) {
            ApiMessage message = fresh.get();
            new ShareWire().fill(message, v);
            byte[] bytes = serialize(message, v);
            ApiMessage back = fresh.get();
            back.read(new ByteBufferAccessor(ByteBuffer.wrap(bytes)), v);
            if (!back.equals(message)) {
                throw new IllegalStateException(key + " " + kind + " v" + v + " reads back otherwise");
            }
            System.out.println(key + " " + kind + " " + v + " " + HexFormat.of().formatHex(bytes));
        }
    }

    private static byte[] serialize(Message message, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        ByteBuffer buffer = ByteBuffer.allocate(message.size(cache, version));
        message.write(new ByteBufferAccessor(buffer), cache, version);
        return buffer.array();
    }

    /** The field names of ``message``'s class at ``version``, tagged ones last. */
    private static Set<String> fieldNames(Class<?> cls, short version) throws Exception {
        Schema schema = ((Schema[]) cls.getField("SCHEMAS").get(null))[version];
        Set<String> names = new LinkedHashSet<>();
        for (BoundField field : schema.fields()) {
            if (field.def.type instanceof TaggedFields) {
                ((TaggedFields) field.def.type).fields().values().forEach(f -> names.add(f.name));
            } else {
                names.add(field.def.name);
            }
        }
        return names;
    }

    private static Method accessor(Class<?> cls, String prefix, String snakeName, int params) {
        String wanted = prefix + snakeName.replace("_", "");
        for (Method method : cls.getMethods()) {
            if (method.getName().equalsIgnoreCase(wanted) && method.getParameterCount() == params) {
                return method;
            }
        }
        throw new IllegalStateException("no " + wanted + " in " + cls.getName());
    }

    private void fill(Message message, short version) throws Exception {
        Class<?> cls = message.getClass();
        for (String name : fieldNames(cls, version)) {
            Method getter = accessor(cls, "", name, 0);
            Method setter = accessor(cls, "set", name, 1);
            Object current = getter.invoke(message);
            setter.invoke(message, value(setter.getParameterTypes()[0], getter.getGenericReturnType(),
                                         name, current, version));
        }
    }

    private Object value(Class<?> cls, Type generic, String name, Object current, short version)
            throws Exception {
        if (Message.class.isAssignableFrom(cls)) {
            Message struct = (Message) cls.getConstructor().newInstance();
            fill(struct, version);
            return struct;
        }
        if (ImplicitLinkedHashMultiCollection.class.isAssignableFrom(cls)) {
            @SuppressWarnings("unchecked")
            Collection<Object> collection = (Collection<Object>) cls.getConstructor().newInstance();
            Class<?> element = (Class<?>) ((ParameterizedType) cls.getGenericSuperclass())
                .getActualTypeArguments()[0];
            for (int i = 0; i < 2; i++) {
                collection.add(value(element, element, name, null, version));
            }
            return collection;
        }
        if (List.class.isAssignableFrom(cls)) {
            Type elementType = ((ParameterizedType) generic).getActualTypeArguments()[0];
            Class<?> element = (Class<?>) elementType;
            List<Object> list = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                list.add(value(element, element, name, null, version));
            }
            return list;
        }
        int n = ++counter;
        if (cls == byte.class || cls == Byte.class) return (byte) (n % 100 + 1);
        if (cls == short.class || cls == Short.class) return (short) n;
        if (cls == int.class || cls == Integer.class) return n;
        if (cls == long.class || cls == Long.class) return (long) n;
        if (cls == boolean.class) return !((Boolean) current);
        if (cls == String.class) return name + n;
        if (cls == Uuid.class) return new Uuid(n, n);
        if (cls == BaseRecords.class) {
            byte[] bytes = ("records" + n).getBytes(StandardCharsets.UTF_8);
            return MemoryRecords.readableRecords(ByteBuffer.wrap(bytes));
        }
        throw new IllegalStateException("no value for " + name + " of " + cls.getName());
    }
}
