package kwire.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.ByteBuffer;
import java.util.function.Function;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.errors.CorruptRecordException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.CompressionType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.ProduceResponse;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.internals.BufferSupplier;
import org.apache.kafka.common.utils.internals.PrimitiveRef;
import org.apache.kafka.storage.internals.log.AppendOrigin;
import org.apache.kafka.storage.internals.log.LogValidator;
import org.apache.kafka.storage.internals.log.RecordValidationException;

/**
 * The validate mode of the harness, for kwire's tests/kafka_validator.rs: what a Kafka 4.4 broker
 * does to one Produce partition's {@code records} before appending them, ending in Kafka's own
 * {@code LogValidator.validateMessagesAndAssignOffsets} (kafka-storage).
 *
 * <p>{@code validate <json>} with {@code hex} (the field), {@code baseOffset}, {@code leaderEpoch},
 * {@code now}, {@code timestampType} ({@code CREATE_TIME} or {@code LOG_APPEND_TIME}),
 * {@code before}, {@code after} (the timestamp window), {@code compression} ({@code producer} or a
 * codec name), {@code compacted}, {@code maxMessageBytes}, {@code produceVersion} and
 * {@code maxRecordBodySize}. The steps, in the broker's order:
 *
 * <ol>
 *   <li>{@code ProduceRequest.validateRecords(version, records)}, as KafkaApis calls it;
 *   <li>the checks of {@code UnifiedLog.analyzeAndValidateRecords} (a private method, so written
 *       out here in its order: base offset 0, {@code max.message.bytes}, the CRC, the codec id),
 *       and the trimming of the bytes after the last complete batch;
 *   <li>{@code new LogValidator(..., AppendOrigin.CLIENT, maxRecordBodySize)
 *       .validateMessagesAndAssignOffsets(PrimitiveRef.ofLong(baseOffset), ...)} with a clock that
 *       answers {@code now}.
 * </ol>
 *
 * <p>The answer is {@code {"error": <code>, "exception": "...", "recordErrors": [[index, message],
 * ...]}} (the code as {@code Errors.forException} maps what was thrown; a RecordValidationException
 * by its inner exception, as ReplicaManager does) or {@code {"error": 0, "hex": <validated bytes>,
 * "maxTimestamp", "logAppendTime", "lastOffset", "sizeMaybeChanged"}}.
 */
final class ValidateMode {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private ValidateMode() {}

    static JsonNode handle(String line, Function<String, byte[]> unhex, Function<byte[], String> hex) throws Exception {
        if (!line.startsWith("validate ")) {
            return null;
        }
        JsonNode spec = MAPPER.readTree(line.substring("validate ".length()));
        byte[] field = unhex.apply(spec.get("hex").asText());
        ObjectNode out = MAPPER.createObjectNode();
        try {
            validate(spec, field, out, hex);
        } catch (RecordValidationException e) {
            out.put("error", Errors.forException(e.invalidException()).code());
            out.put("exception", e.invalidException().getClass().getName() + ": " + e.invalidException().getMessage());
            ArrayNode errors = out.putArray("recordErrors");
            for (ProduceResponse.RecordError r : e.recordErrors()) {
                ArrayNode pair = MAPPER.createArrayNode();
                pair.add(r.batchIndex);
                pair.add(r.message);
                errors.add(pair);
            }
        } catch (Throwable e) {
            out.put("error", Errors.forException(e).code());
            out.put("exception", e.getClass().getName() + ": " + e.getMessage());
        }
        return out;
    }

    private static void validate(JsonNode spec, byte[] field, ObjectNode out, Function<byte[], String> hex) {
        short version = (short) spec.get("produceVersion").asInt();
        MemoryRecords records = MemoryRecords.readableRecords(ByteBuffer.wrap(field));
        // KafkaApis.handleProduceRequest.
        ProduceRequest.validateRecords(version, records);

        // UnifiedLog.analyzeAndValidateRecords, origin CLIENT.
        TopicPartition tp = new TopicPartition("t", 0);
        int maxMessageBytes = spec.get("maxMessageBytes").asInt();
        int validBytes = 0;
        CompressionType source = CompressionType.NONE;
        for (MutableRecordBatch batch : records.batches()) {
            if (batch.magic() >= RecordBatch.MAGIC_VALUE_V2 && batch.baseOffset() != 0) {
                throw new InvalidRecordException("The baseOffset of the record batch should be 0, but it is " + batch.baseOffset());
            }
            if (batch.sizeInBytes() > maxMessageBytes) {
                throw new RecordTooLargeException("The record batch size is " + batch.sizeInBytes() + " bytes");
            }
            if (!batch.isValid()) {
                throw new CorruptRecordException("Record is corrupt (stored crc = " + batch.checksum() + ")");
            }
            validBytes += batch.sizeInBytes();
            CompressionType c = CompressionType.forId(batch.compressionType().id);
            if (c != CompressionType.NONE) {
                source = c;
            }
        }
        if (validBytes < field.length) {
            ByteBuffer trimmed = ByteBuffer.wrap(field);
            trimmed.limit(validBytes);
            records = MemoryRecords.readableRecords(trimmed.slice());
        }

        String topicCompression = spec.get("compression").asText();
        Compression target = Compression.of(topicCompression.equals("producer") ? source
                : CompressionType.forName(topicCompression)).build();
        long now = spec.get("now").asLong();
        Time clock = new Time() {
            @Override
            public long milliseconds() {
                return now;
            }

            @Override
            public long nanoseconds() {
                return now * 1_000_000L;
            }

            @Override
            public void sleep(long ms) {}
        };
        LogValidator validator = new LogValidator(records, tp, clock, source, target,
                spec.get("compacted").asBoolean(), RecordBatch.MAGIC_VALUE_V2,
                TimestampType.valueOf(spec.get("timestampType").asText()),
                spec.get("before").asLong(), spec.get("after").asLong(), spec.get("leaderEpoch").asInt(),
                AppendOrigin.CLIENT, spec.get("maxRecordBodySize").asInt());
        PrimitiveRef.LongRef counter = PrimitiveRef.ofLong(spec.get("baseOffset").asLong());
        LogValidator.MetricsRecorder metrics = new LogValidator.MetricsRecorder() {
            @Override
            public void recordInvalidMagic() {}

            @Override
            public void recordInvalidOffset() {}

            @Override
            public void recordInvalidSequence() {}

            @Override
            public void recordInvalidChecksums() {}

            @Override
            public void recordNoKeyCompactedTopic() {}
        };
        LogValidator.ValidationResult result = validator.validateMessagesAndAssignOffsets(counter, metrics,
                BufferSupplier.create());
        ByteBuffer validated = result.validatedRecords().buffer().duplicate();
        byte[] bytes = new byte[validated.remaining()];
        validated.get(bytes);
        out.put("error", 0);
        out.put("hex", hex.apply(bytes));
        out.put("maxTimestamp", result.maxTimestampMs());
        out.put("logAppendTime", result.logAppendTimeMs());
        out.put("lastOffset", counter.value - 1);
        out.put("sizeMaybeChanged", result.messageSizeMaybeChanged());
    }
}
