// kafkajs against a Kafka broker (here `kwire serve`): prints one JSON object.
//
// Usage: node kafkajs_client.js HOST:PORT TOPIC...   (e.g. orders payments)
//
// kafkajs must be resolvable: tests/interop.rs sets NODE_PATH to target/interop/node/node_modules.
// Every answer is written as the client returned it; a call that threw is
// {"error": "<message>"} in place of its answer, so one failure does not hide the others.
// kafkajs's admin client has no isolation-level option (its ListOffsets requests always
// carry read_committed) and no max-timestamp lookup. Used by tests/interop.rs; see
// docs/interop.md.

const { Kafka, logLevel } = require('kafkajs')

const T0 = 1700000000000
const TIMESTAMPS = [T0 + 2000, T0 + 6000, T0 + 300000]

// kafkajs logs to stdout by default; stdout carries the JSON, so logs go to stderr.
const stderrLogger = () => ({ namespace, level, log }) => {
  process.stderr.write(`[kafkajs ${namespace}] ${log.message} ${JSON.stringify(log)}\n`)
}

async function attempt(fn) {
  try {
    return await fn()
  } catch (e) {
    return { error: `${e.name}: ${e.message}` }
  }
}

function byPartition(topic, partitions, value) {
  const out = {}
  for (const p of [...partitions].sort((a, b) => a.partition - b.partition)) {
    out[`${topic}/${p.partition}`] = value(p)
  }
  return out
}

async function main() {
  const [bootstrap, ...topics] = process.argv.slice(2)
  const kafka = new Kafka({
    clientId: 'kwire-interop-kafkajs',
    brokers: [bootstrap],
    connectionTimeout: 5000,
    requestTimeout: 10000,
    retry: { retries: 1, initialRetryTime: 100, maxRetryTime: 1000 },
    logLevel: logLevel.WARN,
    logCreator: stderrLogger,
  })
  const admin = kafka.admin()
  await admin.connect()
  const out = {
    client: 'kafkajs',
    version: require('kafkajs/package.json').version,
  }

  out.describe_cluster = await attempt(async () => {
    const c = await admin.describeCluster()
    return {
      cluster_id: c.clusterId,
      controller: c.controller,
      brokers: c.brokers.map(b => [b.nodeId, b.host, b.port]),
    }
  })
  out.topic_metadata = await attempt(async () => {
    const m = await admin.fetchTopicMetadata({ topics })
    return m.topics
      .map(t => ({
        name: t.name,
        partitions: t.partitions
          .map(p => [p.partitionId, p.leader, p.replicas, p.isr, p.partitionErrorCode])
          .sort((a, b) => a[0] - b[0]),
      }))
      .sort((a, b) => (a.name < b.name ? -1 : 1))
  })
  out.list_topics = await attempt(async () => (await admin.listTopics()).sort())

  out.list_groups = {
    all: await attempt(async () => {
      const { groups } = await admin.listGroups()
      return groups.map(g => [g.groupId, g.protocolType]).sort()
    }),
  }

  const offsets = {}
  for (const topic of topics) {
    // Earliest and latest (read_committed): one call, two ListOffsets requests.
    offsets[`earliest_latest/${topic}`] = await attempt(async () =>
      byPartition(topic, await admin.fetchTopicOffsets(topic), p => ({
        offset: p.offset,
        high: p.high,
        low: p.low,
      }))
    )
    for (const ts of TIMESTAMPS) {
      offsets[`timestamp_${ts}/${topic}`] = await attempt(async () =>
        byPartition(topic, await admin.fetchTopicOffsetsByTimestamp(topic, ts), p => ({
          offset: p.offset,
        }))
      )
    }
  }
  out.admin_offsets = offsets
  await admin.disconnect()
  process.stdout.write(JSON.stringify(out, null, 1) + '\n')
}

main().catch(e => {
  process.stderr.write(`kafkajs_client: ${e.stack || e}\n`)
  process.exit(1)
})
