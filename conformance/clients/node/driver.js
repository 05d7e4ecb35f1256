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
  const out = Object.create(null) // a header may be called "constructor"
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

function message(r) {
  const m = { partition: r.partition, key: bytes(r.key), value: bytes(r.value) }
  if (r.headers.length) m.headers = headersIn(r.headers)
  if (r.timestamp >= 0) m.timestamp = String(r.timestamp)
  return m
}

const b64size = x => (x ? Buffer.byteLength(x, 'base64') : 0)
const size = r =>
  b64size(r.key) + b64size(r.value) + r.headers.reduce((n, [k, v]) => n + k.length + b64size(v), 0)

// Consecutive runs of records of at most `limit` bytes (a larger record alone).
function chunks(records, limit) {
  const out = []
  let current = []
  let bytes = 0
  for (const r of records) {
    if (current.length && bytes + size(r) > limit) {
      out.push(current)
      current = []
      bytes = 0
    }
    current.push(r)
    bytes += size(r)
  }
  if (current.length) out.push(current)
  return out
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
    // kafkajs puts all of one send()'s records for a partition in one batch, with no
    // size limit of its own: records go in consecutive sends of at most 1 MiB (the
    // Java producer's default request size), so a large record gets a batch alone.
    const offsets = []
    for (const chunk of chunks(cmd.records, 1 << 20)) {
      const sent = await producer.send({
        topic: cmd.topic,
        acks: -1,
        timeout: 30000,
        compression: CODECS[codec],
        messages: chunk.map(message),
      })
      // A record's offset is its batch's base offset plus its place among that
      // partition's records in the send.
      const base = new Map(sent.map(s => [s.partition, Number(s.baseOffset)]))
      const seen = new Map()
      for (const r of chunk) {
        const i = seen.get(r.partition) || 0
        seen.set(r.partition, i + 1)
        offsets.push(base.get(r.partition) + i)
      }
    }
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

// A member that stays in the group until stdin closes, printing {"assigned": [...]}
// after each join (kafkajs reports its assignment then); then it leaves.
async function member(cmd, input) {
  const consumer = client(cmd).consumer({ groupId: cmd.group, maxWaitTimeInMs: 200 })
  const say = obj => process.stdout.write(JSON.stringify(obj) + '\n')
  consumer.on(consumer.events.GROUP_JOIN, e => {
    say({ assigned: (e.payload.memberAssignment[cmd.topic] || []).slice().sort((a, b) => a - b) })
  })
  consumer.on(consumer.events.CRASH, e => say({ error: errorName(e.payload.error) }))
  await consumer.connect()
  await consumer.subscribe({ topics: [cmd.topic], fromBeginning: true })
  await consumer.run({ autoCommit: false, eachMessage: async () => {} })
  await input.closed
  await consumer.disconnect()
  return { left: true }
}

// The flow of conformance/clients/transactional.py: c1 and c2 committed, a1
// aborted, then a second producer with the same transactional id fences the first
// while its transaction (the zombie's record) is open, and commits c3. The answer
// is how the first one's next send or commit failed.
async function txnFlow(cmd) {
  const kafka = client(cmd)
  const producer = () =>
    kafka.producer({ transactionalId: cmd.transactional_id, idempotent: true, maxInFlightRequests: 1 })
  const send = (txn, partition, value) =>
    txn.send({ topic: cmd.topic, acks: -1, messages: [{ partition, value: Buffer.from(value) }] })
  const first = producer()
  await first.connect()
  const second = producer()
  try {
    for (const [values, commit] of [[['c1', 'c2'], true], [['a1'], false]]) {
      const txn = await first.transaction()
      for (const [i, v] of values.entries()) await send(txn, i % 2, v)
      await (commit ? txn.commit() : txn.abort())
    }
    const zombie = await first.transaction()
    await send(zombie, 0, 'zombie')
    await second.connect()
    const txn = await second.transaction()
    await send(txn, 1, 'c3')
    await txn.commit()
    try {
      await send(zombie, 1, 'late')
      await zombie.commit()
    } catch (e) {
      if (!isClientError(e)) throw e
      return { fenced: errorName(e) }
    }
    return { fenced: 'not fenced' }
  } finally {
    await first.disconnect()
    await second.disconnect()
  }
}

const OPS = {
  txn_flow: txnFlow,
  produce,
  consume,
  list_offset: listOffset,
  group_consume: groupConsume,
  committed,
  member,
}

function answer(obj, code) {
  process.stdout.write(JSON.stringify(obj) + '\n', () => process.exit(code))
}

// The command is stdin's first line; `closed` resolves when stdin ends.
function readCommand() {
  let buffered = ''
  let closedResolve
  const closed = new Promise(resolve => (closedResolve = resolve))
  const first = new Promise((resolve, reject) => {
    process.stdin.setEncoding('utf8')
    process.stdin.on('data', chunk => {
      buffered += chunk
      const end = buffered.indexOf('\n')
      if (end >= 0) resolve(buffered.slice(0, end))
    })
    process.stdin.on('end', () => {
      resolve(buffered)
      closedResolve()
    })
    process.stdin.on('error', reject)
  })
  return { first, closed }
}

async function main() {
  const input = readCommand()
  const cmd = JSON.parse(await input.first)
  const op = OPS[cmd.op]
  if (!op) throw new Error(`unknown op ${cmd.op}`)
  // Every call ends: past its deadline the process says so and exits.
  setTimeout(() => {
    process.stderr.write(`kafkajs driver: ${cmd.op} timed out after ${cmd.timeout_ms} ms\n`)
    process.exit(3)
  }, cmd.timeout_ms)
  try {
    answer(await op(cmd, input), 0)
  } catch (e) {
    if (!isClientError(e)) throw e
    answer({ error: errorName(e) }, 0)
  }
}

main().catch(e => {
  process.stderr.write(`kafkajs driver: ${(e && e.stack) || e}\n`)
  process.exit(2)
})
