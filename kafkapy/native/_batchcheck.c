/*
 * _batchcheck: the per-record walk of a Kafka v2 record batch, in C.
 *
 * Job: read exactly `count` records from uncompressed record bytes, check each
 * record's framing as Kafka's DefaultRecord.readFrom does, and collect what
 * LogValidator needs (key presence, timestamps, offset deltas).  No allocation
 * happens per record unless a record is refused.
 *
 * Invariants: the result is identical to kafkapy/native/reference.py's walk()
 * for every input (the tests compare both); every read is bounded by the end of
 * the current record or of the buffer; each loop pass consumes at least two
 * bytes or stops, so the walk is O(len(data)) whatever `count` says; 64-bit
 * arithmetic wraps as Java's longs do (done on unsigned values: no UB).
 *
 * Record layout (zig-zag varints):
 *   length | attributes int8 | timestampDelta varlong | offsetDelta varint |
 *   keyLength | key | valueLength | value | headerCount | headers...
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>

#define INVALID_RECORD 87
#define UNKNOWN_SERVER_ERROR (-1)
#define KEYLESS 1
#define OUT_OF_RANGE 2
#define LOG_APPEND_TYPE 3
#define HIGH_ATTRIBUTES 4
#define HEADER_KEY_NOT_UTF8 5

static const char PREMATURE_EOF[] = "Incorrect declared batch size, premature EOF reached";
static const char STILL_REMAINING[] = "Incorrect declared batch size, records still remaining in file";
static const char INVALID_STRUCTURE[] = "Found invalid record structure";

typedef struct {
    const unsigned char *data;
    Py_ssize_t n;
    int fail_code;          /* 0 while the framing is good */
    char fail_msg[200];
    int strict;             /* look for what stock readers cannot parse */
    int hazard;             /* HIGH_ATTRIBUTES / HEADER_KEY_NOT_UTF8 in this record */
} Walk;

static int fail(Walk *w, int code, const char *msg) {
    w->fail_code = code;
    snprintf(w->fail_msg, sizeof w->fail_msg, "%s", msg);
    return -1;
}

/* Raw LEB128 of at most max_bytes bytes before end; returns 1 when it is longer. */
static int read_raw(Walk *w, Py_ssize_t *p, Py_ssize_t end, int max_bytes, uint64_t *raw) {
    uint64_t v = 0;
    int shift = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (*p >= end)
            return fail(w, INVALID_RECORD, INVALID_STRUCTURE);
        unsigned char b = w->data[(*p)++];
        if (shift < 64)
            v |= (uint64_t)(b & 0x7F) << shift;
        shift += 7;
        if (!(b & 0x80)) {
            *raw = v;
            return 0;
        }
    }
    *raw = v;
    return 1;
}

static int32_t zigzag32(uint64_t raw) {
    uint32_t r = (uint32_t)raw;
    return (int32_t)((r >> 1) ^ (0u - (r & 1u)));
}

static int64_t zigzag64(uint64_t raw) {
    return (int64_t)((raw >> 1) ^ (0ull - (raw & 1ull)));
}

static int read_int(Walk *w, Py_ssize_t *p, Py_ssize_t end, int32_t *out) {
    uint64_t raw;
    int r = read_raw(w, p, end, 5, &raw);
    if (r < 0)
        return -1;
    if (r > 0)
        return fail(w, INVALID_RECORD, INVALID_STRUCTURE);
    *out = zigzag32(raw);
    return 0;
}

static int read_long(Walk *w, Py_ssize_t *p, Py_ssize_t end, int64_t *out) {
    uint64_t raw;
    int r = read_raw(w, p, end, 10, &raw);
    if (r < 0)
        return -1;
    if (r > 0)
        return fail(w, INVALID_RECORD, INVALID_STRUCTURE);
    *out = zigzag64(raw);
    return 0;
}

/* A length-prefixed field; a negative length is null and takes no bytes. */
static int skip_blob(Walk *w, Py_ssize_t *p, Py_ssize_t end, int32_t *size) {
    if (read_int(w, p, end, size) < 0)
        return -1;
    if (*size > 0) {
        if (*size > end - *p)
            return fail(w, INVALID_RECORD, INVALID_STRUCTURE);
        *p += *size;
    }
    return 0;
}

/* The record's length prefix: Kafka answers differently for bytes and for streams. */
static int read_length(Walk *w, Py_ssize_t *p, int stream, int32_t *out) {
    uint64_t raw = 0;
    int shift = 0;
    for (int i = 0; i < 5; i++) {
        if (*p >= w->n)
            return fail(w, INVALID_RECORD, PREMATURE_EOF);
        unsigned char b = w->data[(*p)++];
        raw |= (uint64_t)(b & 0x7F) << shift;
        shift += 7;
        if (!(b & 0x80)) {
            *out = zigzag32(raw);
            return 0;
        }
    }
    if (stream)
        return fail(w, INVALID_RECORD, PREMATURE_EOF);
    w->fail_code = UNKNOWN_SERVER_ERROR;
    snprintf(w->fail_msg, sizeof w->fail_msg,
             "Varint is too long, the most significant bit in the 5th byte is set, "
             "converted value: %x", (unsigned)(uint32_t)raw);
    return -1;
}

/* Strict UTF-8 as Python's decoder takes it: no overlong forms, surrogates or > U+10FFFF. */
static int is_utf8(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        int len;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else return 0;
        if (n - i < len || s[i + 1] < lo || s[i + 1] > hi)
            return 0;
        for (int k = 2; k < len; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF)
                return 0;
        i += len;
    }
    return 1;
}

static int skip_headers(Walk *w, Py_ssize_t *p, Py_ssize_t end) {
    int32_t count, size;
    if (read_int(w, p, end, &count) < 0)
        return -1;
    if (count < 0) {
        w->fail_code = INVALID_RECORD;
        snprintf(w->fail_msg, sizeof w->fail_msg,
                 "Found invalid number of record headers %d", (int)count);
        return -1;
    }
    if (count > end - *p) {
        w->fail_code = INVALID_RECORD;
        snprintf(w->fail_msg, sizeof w->fail_msg,
                 "Found invalid number of record headers. %d is larger than the remaining "
                 "size of the buffer", (int)count);
        return -1;
    }
    for (int32_t i = 0; i < count; i++) {
        if (read_int(w, p, end, &size) < 0)
            return -1;
        if (size < 0) {
            w->fail_code = INVALID_RECORD;
            snprintf(w->fail_msg, sizeof w->fail_msg,
                     "Invalid negative header key size %d", (int)size);
            return -1;
        }
        if (size > end - *p)
            return fail(w, INVALID_RECORD, INVALID_STRUCTURE);
        if (w->strict && !w->hazard && !is_utf8(w->data + *p, size))
            w->hazard = HEADER_KEY_NOT_UTF8;
        *p += size;
        if (skip_blob(w, p, end, &size) < 0)
            return -1;
    }
    return 0;
}

typedef struct {
    int64_t ts_delta;
    int32_t offset_delta, key_size, value_size;
} Rec;

static int read_record(Walk *w, Py_ssize_t *pos, int stream, Rec *r) {
    int32_t length;
    if (read_length(w, pos, stream, &length) < 0)
        return -1;
    if (length < 0)
        return fail(w, INVALID_RECORD, INVALID_STRUCTURE);
    Py_ssize_t start = *pos, remaining = w->n - start;
    if (length > remaining) {
        w->fail_code = INVALID_RECORD;
        snprintf(w->fail_msg, sizeof w->fail_msg,
                 "Invalid record size: expected %d bytes in record payload, but instead the "
                 "buffer has only %zd remaining bytes.", (int)length, remaining);
        return -1;
    }
    Py_ssize_t end = start + length;
    if (start >= end)
        return fail(w, INVALID_RECORD, INVALID_STRUCTURE);
    /* Attributes are unused in v2 and Kafka takes any byte, but kafka-python reads the
       byte as a varint: with its high bit set, it misreads the whole record. */
    w->hazard = (w->strict && (w->data[start] & 0x80)) ? HIGH_ATTRIBUTES : 0;
    Py_ssize_t p = start + 1;
    if (read_long(w, &p, end, &r->ts_delta) < 0 || read_int(w, &p, end, &r->offset_delta) < 0
            || skip_blob(w, &p, end, &r->key_size) < 0
            || skip_blob(w, &p, end, &r->value_size) < 0 || skip_headers(w, &p, end) < 0)
        return -1;
    if (p != end) {
        w->fail_code = INVALID_RECORD;
        snprintf(w->fail_msg, sizeof w->fail_msg,
                 "Invalid record size: expected to read %d bytes in record payload, but "
                 "instead read %zd", (int)length, p - start);
        return -1;
    }
    *pos = end;
    return 0;
}

typedef struct {
    int compacted, topic_create_time, batch_log_append;
    int64_t now, before, after;
} Rules;

static int refusal(const Rules *rules, int hazard, int64_t ts, int32_t key_size) {
    if (hazard)
        return hazard;
    if (rules->compacted && key_size < 0)
        return KEYLESS;
    if (rules->topic_create_time && ts != -1) {
        int64_t diff = (int64_t)((uint64_t)rules->now - (uint64_t)ts);
        int64_t neg = (int64_t)(0ull - (uint64_t)diff);
        return (diff > rules->before || neg > rules->after) ? OUT_OF_RANGE : 0;
    }
    return rules->batch_log_append ? LOG_APPEND_TYPE : 0;
}

static int add_error(PyObject *errors, long i, int kind, int64_t ts, int64_t offset,
                     const Rec *r) {
    PyObject *t = Py_BuildValue("(liLLii)", i, kind, (long long)ts, (long long)offset,
                                (int)r->key_size, (int)r->value_size);
    if (t == NULL)
        return -1;
    int rc = PyList_Append(errors, t);
    Py_DECREF(t);
    return rc;
}

PyDoc_STRVAR(walk_doc,
"walk(data, count, base_offset, base_ts, batch_log_append, batch_max_ts, compacted,\n"
"     topic_create_time, now, before, after, stream, strict)\n"
"-> (failure, max_ts, max_index, in_order, errors); see kafkapy/native/reference.py.");

static PyObject *walk(PyObject *self, PyObject *args) {
    Py_buffer buf;
    long long count, base_offset, base_ts, batch_max_ts, now, before, after;
    int batch_log_append, compacted, topic_create_time, stream, strict;
    if (!PyArg_ParseTuple(args, "y*LLLpLppLLLpp", &buf, &count, &base_offset, &base_ts,
                          &batch_log_append, &batch_max_ts, &compacted, &topic_create_time,
                          &now, &before, &after, &stream, &strict))
        return NULL;
    Walk w = {buf.buf, buf.len, 0, {0}, strict, 0};
    Rules rules = {compacted, topic_create_time, batch_log_append, now, before, after};
    PyObject *errors = PyList_New(0);
    if (errors == NULL) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    int64_t max_ts = -1;
    long max_index = -1;
    int in_order = 1;
    Py_ssize_t pos = 0;
    Rec r;
    for (long long i = 0; i < count; i++) {
        if (read_record(&w, &pos, stream, &r) < 0)
            break;
        int64_t ts = batch_log_append ? batch_max_ts
                                      : (int64_t)((uint64_t)base_ts + (uint64_t)r.ts_delta);
        if (r.offset_delta != i)
            in_order = 0;
        if (ts > max_ts) {
            max_ts = ts;
            max_index = (long)i;
        }
        int kind = refusal(&rules, w.hazard, ts, r.key_size);
        if (kind && add_error(errors, (long)i, kind, ts,
                              (int64_t)((uint64_t)base_offset + (uint64_t)(int64_t)r.offset_delta),
                              &r) < 0) {
            Py_DECREF(errors);
            PyBuffer_Release(&buf);
            return NULL;
        }
    }
    if (!w.fail_code && pos != w.n)
        fail(&w, INVALID_RECORD, STILL_REMAINING);
    PyBuffer_Release(&buf);
    if (w.fail_code) {
        Py_DECREF(errors);
        return Py_BuildValue("((is)iiO[])", w.fail_code, w.fail_msg, -1, -1, Py_False);
    }
    PyObject *result = Py_BuildValue("(OLlON)", Py_None, (long long)max_ts, max_index,
                                     in_order ? Py_True : Py_False, errors);
    return result;
}

PyDoc_STRVAR(find_doc,
"find_at_or_after(data, count, base_ts, batch_log_append, batch_max_ts, target)\n"
"-> (offset_delta, timestamp) of the first record whose timestamp >= target, or None\n"
"(also None when the records do not parse).  ListOffsets by time without building a\n"
"Python object per record.");

static PyObject *find_at_or_after(PyObject *self, PyObject *args) {
    Py_buffer buf;
    long long count, base_ts, batch_max_ts, target;
    int batch_log_append;
    if (!PyArg_ParseTuple(args, "y*LLpLL", &buf, &count, &base_ts, &batch_log_append,
                          &batch_max_ts, &target))
        return NULL;
    Walk w = {buf.buf, buf.len, 0, {0}, 0, 0};
    Py_ssize_t pos = 0;
    Rec r;
    PyObject *found = NULL;
    for (long long i = 0; i < count && !found; i++) {
        if (read_record(&w, &pos, 1, &r) < 0)
            break;
        int64_t ts = batch_log_append ? batch_max_ts
                                      : (int64_t)((uint64_t)base_ts + (uint64_t)r.ts_delta);
        if (ts >= target)
            found = Py_BuildValue("(iL)", (int)r.offset_delta, (long long)ts);
    }
    PyBuffer_Release(&buf);
    if (found)
        return found;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, walk_doc},
    {"find_at_or_after", find_at_or_after, METH_VARARGS, find_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_batchcheck",
    "Per-record walk of Kafka v2 record batches (see kafkapy/native/__init__.py).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__batchcheck(void) {
    return PyModule_Create(&module);
}
