package kwire.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.Base64;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.CompressionType;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.SimpleRecord;

/**
 * The records mode of the harness, for kwire's tests/kafka_records.rs: Apache Kafka's own
 * {@code MemoryRecords} reading and building {@code records} fields.
 *
 * <ul>
 *   <li>{@code records-read <hex>}: Kafka reads the field with {@code
 *       MemoryRecords.readableRecords} and answers its canonical form ({@link #describe}).
 *   <li>{@code records-build <json>}: Kafka builds a field with {@code MemoryRecords.builder}, one
 *       builder per batch spec of {@code {"batches": [...]}} (magic, codec id, timestamp type,
 *       base offset, log-append time, producer id / epoch, base sequence, transactional, control,
 *       partition leader epoch, records with offset, timestamp, key, value and headers), the
 *       batches concatenated; it answers {@code {"hex": <the field>, "kafka": <canonical form of
 *       Kafka reading it back>}}.
 * </ul>
 *
 * <p>The canonical form is {@code {"batches": [...]}}, one object per batch that {@code batches()}
 * yields, with {@code "error"} beside them when reading failed part way. Keys and values are
 * base64 or null; header keys are Kafka's strings.
 */
final class RecordsMode {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final Base64.Encoder B64 = Base64.getEncoder();
    private static final Base64.Decoder UNB64 = Base64.getDecoder();

    private RecordsMode() {}

    /** Answers one records line, or returns null when the line is not a records line. */
    static JsonNode handle(String line, java.util.function.Function<String, byte[]> unhex,
            java.util.function.Function<byte[], String> hex) throws Exception {
        if (line.startsWith("records-read ")) {
            byte[] field = unhex.apply(line.substring("records-read ".length()).trim());
            return describe(field);
        }
        if (line.startsWith("records-build ")) {
            JsonNode spec = MAPPER.readTree(line.substring("records-build ".length()));
            byte[] field = build(spec);
            ObjectNode result = MAPPER.createObjectNode();
            result.put("hex", hex.apply(field));
            result.set("kafka", describe(field));
            return result;
        }
        return null;
    }

    /** Kafka's reading of a field: every batch's header fields and records. */
    static ObjectNode describe(byte[] field) {
        ObjectNode result = MAPPER.createObjectNode();
        ArrayNode batches = result.putArray("batches");
        try {
            MemoryRecords records = MemoryRecords.readableRecords(ByteBuffer.wrap(field));
            for (MutableRecordBatch b : records.batches()) {
                ObjectNode o = MAPPER.createObjectNode();
                o.put("baseOffset", b.baseOffset());
                o.put("lastOffset", b.lastOffset());
                o.put("magic", b.magic());
                o.put("valid", b.isValid());
                o.put("codec", b.compressionType().id);
                o.put("timestampType", b.timestampType().name());
                o.put("transactional", b.isTransactional());
                o.put("control", b.isControlBatch());
                o.put("producerId", b.producerId());
                o.put("producerEpoch", b.producerEpoch());
                o.put("baseSequence", b.baseSequence());
                o.put("partitionLeaderEpoch", b.partitionLeaderEpoch());
                o.put("maxTimestamp", b.maxTimestamp());
                // Added before the records, so that a failure while reading them shows the batch.
                batches.add(o);
                ArrayNode rs = o.putArray("records");
                for (Record r : b) {
                    ObjectNode ro = MAPPER.createObjectNode();
                    ro.put("offset", r.offset());
                    ro.put("timestamp", r.timestamp());
                    ro.put("key", r.hasKey() ? B64.encodeToString(bytes(r.key())) : null);
                    ro.put("value", r.hasValue() ? B64.encodeToString(bytes(r.value())) : null);
                    ArrayNode hs = ro.putArray("headers");
                    for (Header h : r.headers()) {
                        ObjectNode ho = MAPPER.createObjectNode();
                        ho.put("key", h.key());
                        ho.put("value", h.value() == null ? null : B64.encodeToString(h.value()));
                        hs.add(ho);
                    }
                    if (b.isControlBatch()) {
                        ControlRecordType type = ControlRecordType.parse(r.key());
                        ro.put("controlType", type.name());
                        if (type == ControlRecordType.ABORT || type == ControlRecordType.COMMIT) {
                            ro.put("coordinatorEpoch", EndTransactionMarker.deserialize(r).coordinatorEpoch());
                        }
                    }
                    rs.add(ro);
                }
            }
        } catch (Throwable e) {
            result.put("error", e.getClass().getName() + ": " + e.getMessage());
        }
        return result;
    }

    private static byte[] bytes(ByteBuffer buffer) {
        ByteBuffer b = buffer.duplicate();
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return out;
    }

    private static byte[] nullableB64(JsonNode n) {
        return n == null || n.isNull() ? null : UNB64.decode(n.asText());
    }

    /** Kafka's own encoding of the batches that {@code spec} describes. */
    static byte[] build(JsonNode spec) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (JsonNode s : spec.get("batches")) {
            byte magic = (byte) s.get("magic").asInt();
            Compression compression = Compression.of(CompressionType.forId(s.get("codec").asInt())).build();
            TimestampType timestampType = TimestampType.valueOf(s.get("timestampType").asText());
            boolean control = s.get("control").asBoolean();
            MemoryRecordsBuilder builder = MemoryRecords.builder(ByteBuffer.allocate(256), magic, compression,
                    timestampType, s.get("baseOffset").asLong(), s.get("logAppendTime").asLong(),
                    s.get("producerId").asLong(), (short) s.get("producerEpoch").asInt(),
                    s.get("baseSequence").asInt(), s.get("transactional").asBoolean(), control,
                    s.get("partitionLeaderEpoch").asInt());
            for (JsonNode r : s.get("records")) {
                JsonNode hs = r.get("headers");
                Header[] headers = new Header[hs == null ? 0 : hs.size()];
                for (int i = 0; i < headers.length; i++) {
                    headers[i] = new RecordHeader(hs.get(i).get("key").asText(), nullableB64(hs.get(i).get("value")));
                }
                long offset = r.get("offset").asLong();
                long timestamp = r.get("timestamp").asLong();
                byte[] key = nullableB64(r.get("key"));
                byte[] value = nullableB64(r.get("value"));
                if (control) {
                    builder.appendControlRecordWithOffset(offset, new SimpleRecord(timestamp, key, value, headers));
                } else {
                    builder.appendWithOffset(offset, timestamp, key, value, headers);
                }
            }
            MemoryRecords built = builder.build();
            out.write(bytes(built.buffer()));
        }
        return out.toByteArray();
    }
}
