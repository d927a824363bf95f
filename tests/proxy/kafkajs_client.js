// kafkajs through `kwire proxy` against Apache Kafka: prints one JSON object.
//
// Usage: node kafkajs_client.js BOOTSTRAP PREFIX
//
// Same steps and output as kafka_python_client.py. kafkajs has gzip built in; snappy and
// lz4 come from the kafkajs-snappy and kafkajs-lz4 codecs (tests/proxy/setup.sh installs
// them); zstd has no pure-JavaScript codec for kafkajs, so it is not exercised here.
// NODE_PATH must reach target/interop/node/node_modules. Used by tests/proxy.rs.

const { Kafka, logLevel, CompressionTypes, CompressionCodecs } = require('kafkajs')
CompressionCodecs[CompressionTypes.Snappy] = require('kafkajs-snappy')
const LZ4 = require('kafkajs-lz4')
CompressionCodecs[CompressionTypes.LZ4] = new LZ4().codec

const CODECS = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy, lz4: CompressionTypes.LZ4 }
const PER_CODEC = 12
const PARTITIONS = 3

const stderrLogger = () => ({ namespace, level, log }) => {
  process.stderr.write(`[kafkajs ${namespace}] ${log.message}\n`)
}

async function main () {
  const [bootstrap, prefix] = process.argv.slice(2)
  const topic = `${prefix}-t`
  const groupId = `${prefix}-g`
  const kafka = new Kafka({ clientId: 'kafkajs-proxy-test', brokers: [bootstrap], logLevel: logLevel.WARN, logCreator: stderrLogger })
  const out = { client: `kafkajs ${require('kafkajs/package.json').version}`, codecs: Object.keys(CODECS), errors: [] }

  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }], waitForLeaders: true })
  const meta = await admin.fetchTopicMetadata({ topics: [topic] })
  out.topic_partitions = meta.topics[0].partitions.length
  const configs = await admin.describeConfigs({ resources: [{ type: 2, name: topic, configNames: ['cleanup.policy'] }], includeSynonyms: false })
  const entry = configs.resources[0].configEntries.find(e => e.configName === 'cleanup.policy')
  out.config = { 'cleanup.policy': entry && entry.configValue }

  const produced = {}
  for (let p = 0; p < PARTITIONS; p++) produced[p] = []
  // Idempotent: a retry cannot write a record twice, so a duplicate would be the proxy's doing.
  const producer = kafka.producer({ allowAutoTopicCreation: false, idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  for (const [name, codec] of Object.entries(CODECS)) {
    const messages = []
    for (let i = 0; i < PER_CODEC; i++) {
      const value = `${name}-${i}`
      const partition = i % PARTITIONS
      messages.push({ key: String(i), value, partition })
      produced[partition].push(value)
    }
    await producer.send({ topic, messages, compression: codec, acks: -1 })
  }
  await producer.disconnect()
  out.produced = produced

  const consumed = {}
  for (let p = 0; p < PARTITIONS; p++) consumed[p] = []
  const want = PER_CODEC * Object.keys(CODECS).length
  const seen = new Set()
  const consumer = kafka.consumer({ groupId })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(), 40000)
    consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        consumed[partition].push([Number(message.offset), message.value.toString()])
        seen.add(`${partition}/${message.offset}`)
        await consumer.commitOffsets([{ topic, partition, offset: (BigInt(message.offset) + 1n).toString() }])
        if (seen.size >= want) { clearTimeout(timer); resolve() }
      }
    }).catch(reject)
  })
  await consumer.disconnect()
  out.consumed = consumed

  const committed = await admin.fetchOffsets({ groupId, topics: [topic] })
  out.committed = {}
  for (const p of committed[0].partitions) out.committed[p.partition] = Number(p.offset)
  const groups = await admin.listGroups()
  out.groups = groups.groups.map(g => g.groupId).sort()
  const latest = await admin.fetchTopicOffsets(topic)
  out.latest = {}
  for (const p of latest) out.latest[p.partition] = Number(p.offset)
  await admin.disconnect()
  console.log(JSON.stringify(out))
}

main().catch(e => { console.error(e); process.exit(1) })
