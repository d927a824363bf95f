package kwire.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.RequestHeaderDataJsonConverter;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.message.ResponseHeaderDataJsonConverter;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

/**
 * Decodes Kafka frames with Apache Kafka's own generated message classes, for kwire's
 * tests/kafka_codec.rs. One JVM serves a whole test run.
 *
 * <p>Each input line is {@code <request|response> <apiKey> <apiVersion> <hex>}, the hex being a
 * frame without its size prefix: header and body. A request's API and version are read from its
 * header and must match the line's; a response's come from the line. The header version is
 * Kafka's ({@code ApiMessageType.requestHeaderVersion} / {@code responseHeaderVersion}).
 *
 * <p>Each output line is one JSON object: on success {@code {"headerVersion": n, "header": ...,
 * "body": ..., "reencoded": "<hex>"}}, where header and body are what Kafka's generated
 * {@code *JsonConverter.write(message, version)} give and {@code reencoded} is Kafka's own
 * encoding of the header and body it read, or {@code "writeError"} when Kafka cannot write back
 * what it read; on failure {@code {"error": "..."}}, naming the exception Kafka threw while
 * reading or converting, or the bytes it left unread.
 *
 * <p>Lines starting {@code records-read} or {@code records-build} are the records mode of
 * tests/kafka_records.rs, answered by {@link RecordsMode}; lines starting {@code validate}, the
 * LogValidator mode of tests/kafka_validator.rs, by {@link ValidateMode}.
 */
public final class Harness {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final Map<Class<?>, Method> CONVERTERS = new HashMap<>();

    private Harness() {}

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII), 1 << 16);
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode result;
            try {
                result = handle(line.trim());
            } catch (Throwable e) {
                ObjectNode error = MAPPER.createObjectNode();
                error.put("error", describe(e));
                result = error;
            }
            out.write(MAPPER.writeValueAsString(result));
            out.write('\n');
        }
        out.flush();
    }

    private static String describe(Throwable e) {
        if (e instanceof InvocationTargetException && e.getCause() != null) {
            e = e.getCause();
        }
        return e.getClass().getName() + ": " + e.getMessage();
    }

    private static JsonNode handle(String line) throws Exception {
        JsonNode records = RecordsMode.handle(line, Harness::unhex, Harness::hex);
        if (records != null) {
            return records;
        }
        JsonNode validated = ValidateMode.handle(line, Harness::unhex, Harness::hex);
        if (validated != null) {
            return validated;
        }
        String[] parts = line.split(" ", -1);
        if (parts.length != 4) {
            throw new IllegalArgumentException("expected `<request|response> <apiKey> <apiVersion> <hex>`");
        }
        boolean request;
        switch (parts[0]) {
            case "request":
                request = true;
                break;
            case "response":
                request = false;
                break;
            default:
                throw new IllegalArgumentException("unknown kind " + parts[0]);
        }
        short apiKey = Short.parseShort(parts[1]);
        short apiVersion = Short.parseShort(parts[2]);
        byte[] frame = unhex(parts[3]);
        ApiMessageType type = ApiMessageType.fromApiKey(apiKey);
        ByteBufferAccessor reader = new ByteBufferAccessor(ByteBuffer.wrap(frame));

        ObjectNode result = MAPPER.createObjectNode();
        Message header;
        JsonNode headerJson;
        short headerVersion;
        if (request) {
            if (frame.length < 4) {
                throw new IllegalArgumentException("a request frame shorter than its API key and version");
            }
            short key = ByteBuffer.wrap(frame).getShort(0);
            short version = ByteBuffer.wrap(frame).getShort(2);
            if (key != apiKey || version != apiVersion) {
                throw new IllegalArgumentException("the header says API " + key + " v" + version
                        + ", the line says API " + apiKey + " v" + apiVersion);
            }
            headerVersion = type.requestHeaderVersion(apiVersion);
            RequestHeaderData h = new RequestHeaderData();
            h.read(reader, headerVersion);
            header = h;
            headerJson = RequestHeaderDataJsonConverter.write(h, headerVersion);
        } else {
            headerVersion = type.responseHeaderVersion(apiVersion);
            ResponseHeaderData h = new ResponseHeaderData();
            h.read(reader, headerVersion);
            header = h;
            headerJson = ResponseHeaderDataJsonConverter.write(h, headerVersion);
        }
        int headerLength = frame.length - reader.remaining();

        ApiMessage body = request ? type.newRequest() : type.newResponse();
        body.read(reader, apiVersion);
        if (reader.remaining() != 0) {
            throw new IllegalStateException("Kafka read the body and left " + reader.remaining()
                    + " of " + (frame.length - headerLength) + " bytes unread");
        }
        result.put("headerVersion", headerVersion);
        result.set("header", headerJson);
        result.set("body", toJson(body, apiVersion));
        // Kafka may read what it cannot write: report that beside the JSON.
        try {
            result.put("reencoded", hex(encode(header, headerVersion)) + hex(encode(body, apiVersion)));
        } catch (RuntimeException e) {
            result.put("writeError", describe(e));
        }
        return result;
    }

    /** Kafka's JSON for a message: {@code <MessageClass>JsonConverter.write(message, version)}. */
    private static JsonNode toJson(Message message, short version) throws Exception {
        Method write = CONVERTERS.get(message.getClass());
        if (write == null) {
            Class<?> converter = Class.forName(message.getClass().getName() + "JsonConverter");
            write = converter.getMethod("write", message.getClass(), short.class);
            CONVERTERS.put(message.getClass(), write);
        }
        return (JsonNode) write.invoke(null, message, version);
    }

    /** Kafka's encoding of a message, sized first as Kafka's own senders do. */
    private static byte[] encode(Message message, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = message.size(cache, version);
        ByteBuffer buffer = ByteBuffer.allocate(size);
        message.write(new ByteBufferAccessor(buffer), cache, version);
        if (buffer.hasRemaining()) {
            throw new IllegalStateException("Kafka sized the message at " + size + " bytes but wrote "
                    + buffer.position());
        }
        return buffer.array();
    }

    private static byte[] unhex(String text) {
        if (text.length() % 2 != 0) {
            throw new IllegalArgumentException("odd number of hex digits");
        }
        byte[] out = new byte[text.length() / 2];
        for (int i = 0; i < out.length; i++) {
            int hi = Character.digit(text.charAt(2 * i), 16);
            int lo = Character.digit(text.charAt(2 * i + 1), 16);
            if (hi < 0 || lo < 0) {
                throw new IllegalArgumentException("not a hex digit at " + (2 * i));
            }
            out[i] = (byte) (hi << 4 | lo);
        }
        return out;
    }

    private static final char[] DIGITS = "0123456789abcdef".toCharArray();

    private static String hex(byte[] bytes) {
        char[] out = new char[bytes.length * 2];
        for (int i = 0; i < bytes.length; i++) {
            out[2 * i] = DIGITS[(bytes[i] >> 4) & 0xf];
            out[2 * i + 1] = DIGITS[bytes[i] & 0xf];
        }
        return new String(out);
    }
}
