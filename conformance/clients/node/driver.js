// kafkajs, as an application would use it: one JSON command on stdin, one JSON
// answer on stdout (conformance/clients/kafkajs.py is the other half).
//
// Bytes travel as base64, a null key/value/header as JSON null. A failure the
// client reports comes back as {"error": "<error name>[:<protocol error type>]"};
// anything else (a bug here, a time-out) exits non-zero with the reason on stderr.
'use strict'

const { randomUUID } = require('crypto')
const { Kafka, logLevel, CompressionTypes, Partitioners } = require('kafkajs')

const CODECS = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP }

const bytes = b64 => (b64 === null || b64 === undefined ? null : Buffer.from(b64, 'base64'))
const b64 = buf => (buf === null || buf === undefined ? null : Buffer.from(buf).toString('base64'))
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

// How kafkajs names a failure: its class, the protocol error type when the broker
// sent one, and what it wraps (KafkaJSNumberOfRetriesExceeded wraps the last error).
function errorName(e) {
  if (!e || typeof e !== 'object') return String(e)
  let name = e.name || 'Error'
  if (e.type) name += `:${e.type}`
  if (e.cause && e.cause !== e) name += `(${errorName(e.cause)})`
  return name
}

function isClientError(e) {
  return !!e && typeof e.name === 'string' && e.name.startsWith('KafkaJS')
}

function client(cmd) {
  return new Kafka({
    clientId: 'kop-conformance',
    brokers: [cmd.bootstrap],
    logLevel: logLevel.NOTHING,
    connectionTimeout: 10000,
    requestTimeout: 30000,
    retry: { retries: 5 },
  })
}

// Headers as kafkajs takes them: an object, a repeated name's values in an array.
function headersIn(pairs) {
  const out = {}
  for (const [name, value] of pairs) {
    const v = bytes(value)
    if (!(name in out)) out[name] = v
    else if (Array.isArray(out[name])) out[name].push(v)
    else out[name] = [out[name], v]
  }
  return out
}

// ...and as it hands them back: [[name, base64], ...] in the object's order.
function headersOut(headers) {
  const out = []
  for (const name of Object.keys(headers || {})) {
    const v = headers[name]
    for (const one of Array.isArray(v) ? v : [v]) out.push([name, b64(one)])
  }
  return out
}

function record(partition, m) {
  return {
    partition,
    offset: Number(m.offset),
    key: b64(m.key),
    value: b64(m.value),
    headers: headersOut(m.headers),
    timestamp: Number(m.timestamp),
  }
}

async function produce(cmd) {
  const codec = cmd.compression || 'none'
  if (!(codec in CODECS)) throw new Error(`codec ${codec} is not built into kafkajs`)
  const producer = client(cmd).producer({
    idempotent: !!cmd.idempotent,
    maxInFlightRequests: cmd.idempotent ? 1 : undefined,
    createPartitioner: Partitioners.DefaultPartitioner,
  })
  await producer.connect()
  try {
    const messages = cmd.records.map(r => {
      const m = { partition: r.partition, key: bytes(r.key), value: bytes(r.value) }
      if (r.headers.length) m.headers = headersIn(r.headers)
      if (r.timestamp >= 0) m.timestamp = String(r.timestamp)
      return m
    })
    const sent = await producer.send({
      topic: cmd.topic,
      acks: -1,
      timeout: 30000,
      compression: CODECS[codec],
      messages,
    })
    // One batch per partition: a record's offset is its batch's base offset plus
    // its place among that partition's records.
    const base = new Map(sent.map(s => [s.partition, Number(s.baseOffset)]))
    const seen = new Map()
    const offsets = cmd.records.map(r => {
      const i = seen.get(r.partition) || 0
      seen.set(r.partition, i + 1)
      return base.get(r.partition) + i
    })
    return { offsets }
  } finally {
    await producer.disconnect()
  }
}

// kafkajs's consumer has no assign(): a member of a throwaway group (nothing is
// committed) seeks the partition once it runs, and keeps that partition's records.
async function consume(cmd) {
  const consumer = client(cmd).consumer({
    groupId: `kop-conformance-${randomUUID()}`,
    maxWaitTimeInMs: 500,
  })
  const got = []
  let next = cmd.start
  let done
  const finished = new Promise(resolve => (done = resolve))
  await consumer.connect()
  try {
    await consumer.subscribe({ topics: [cmd.topic], fromBeginning: true })
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        if (partition !== cmd.partition || got.length >= cmd.n) return
        if (Number(message.offset) < next) return // fetched before the seek took effect
        got.push(record(partition, message))
        next = Number(message.offset) + 1
        if (got.length >= cmd.n) done()
      },
    })
    consumer.seek({ topic: cmd.topic, partition: cmd.partition, offset: String(cmd.start) })
    if (cmd.n > 0) await Promise.race([finished, sleep(cmd.within_ms)])
    return { records: got.slice(0, cmd.n) }
  } finally {
    await consumer.disconnect()
  }
}

async function listOffset(cmd) {
  const admin = client(cmd).admin()
  await admin.connect()
  try {
    let offsets
    if (cmd.spec === 'earliest' || cmd.spec === 'latest') {
      offsets = (await admin.fetchTopicOffsets(cmd.topic)).map(p => ({
        partition: p.partition,
        offset: cmd.spec === 'earliest' ? p.low : p.high,
      }))
    } else {
      offsets = await admin.fetchTopicOffsetsByTimestamp(cmd.topic, cmd.spec)
    }
    const mine = offsets.find(p => p.partition === cmd.partition)
    if (!mine) throw new Error(`partition ${cmd.partition} not in the answer`)
    return { offset: Number(mine.offset) }
  } finally {
    await admin.disconnect()
  }
}

async function groupConsume(cmd) {
  const consumer = client(cmd).consumer({ groupId: cmd.group, maxWaitTimeInMs: 500 })
  const got = []
  let done
  const finished = new Promise(resolve => (done = resolve))
  await consumer.connect()
  try {
    await consumer.subscribe({ topics: [cmd.topic], fromBeginning: true })
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        if (got.length >= cmd.n) return
        got.push(record(partition, message))
        if (got.length >= cmd.n) done()
      },
    })
    if (cmd.n > 0) await Promise.race([finished, sleep(cmd.within_ms)])
    const ends = new Map()
    for (const r of got) ends.set(r.partition, r.offset + 1)
    if (ends.size) {
      await consumer.commitOffsets(
        [...ends].map(([partition, end]) => ({
          topic: cmd.topic,
          partition,
          offset: String(end),
        }))
      )
    }
    return { records: got }
  } finally {
    await consumer.disconnect()
  }
}

async function committed(cmd) {
  const admin = client(cmd).admin()
  await admin.connect()
  try {
    const answer = await admin.fetchOffsets({ groupId: cmd.group, topics: [cmd.topic] })
    const topic = answer.find(t => t.topic === cmd.topic)
    const mine = topic && topic.partitions.find(p => p.partition === cmd.partition)
    const offset = mine ? Number(mine.offset) : -1
    return { offset: offset < 0 ? null : offset }
  } finally {
    await admin.disconnect()
  }
}

const OPS = {
  produce,
  consume,
  list_offset: listOffset,
  group_consume: groupConsume,
  committed,
}

function answer(obj, code) {
  process.stdout.write(JSON.stringify(obj) + '\n', () => process.exit(code))
}

async function main() {
  const chunks = []
  for await (const chunk of process.stdin) chunks.push(chunk)
  const cmd = JSON.parse(Buffer.concat(chunks).toString('utf8'))
  const op = OPS[cmd.op]
  if (!op) throw new Error(`unknown op ${cmd.op}`)
  // Every call ends: past its deadline the process says so and exits.
  setTimeout(() => {
    process.stderr.write(`kafkajs driver: ${cmd.op} timed out after ${cmd.timeout_ms} ms\n`)
    process.exit(3)
  }, cmd.timeout_ms)
  try {
    answer(await op(cmd), 0)
  } catch (e) {
    if (!isClientError(e)) throw e
    answer({ error: errorName(e) }, 0)
  }
}

main().catch(e => {
  process.stderr.write(`kafkajs driver: ${(e && e.stack) || e}\n`)
  process.exit(2)
})
