import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Readable;

public class WireOracle {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.trim().split(" ");
            String name = "org.apache.kafka.common.message." + parts[0] + "Data";
            short version = Short.parseShort(parts[1]);
            byte[] bytes = java.util.HexFormat.of().parseHex(parts.length > 2 ? parts[2] : "");
            ByteBufferAccessor accessor = new ByteBufferAccessor(ByteBuffer.wrap(bytes));
            Object data = Class.forName(name).getConstructor(Readable.class, short.class)
                .newInstance(accessor, version);
            if (accessor.remaining() != 0) throw new IllegalStateException(accessor.remaining() + " bytes left");
            Object json = Class.forName(name + "JsonConverter")
                .getMethod("write", Class.forName(name), short.class).invoke(null, data, version);
            System.out.println(json);
        }
    }
}
