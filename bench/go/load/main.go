// The clients of `python -m bench.load`: many producers and many consumers in groups,
// each a franz-go client of its own (its own connections), at a steady offered load.
//
// Go rather than Java: 200 kafka-clients in one JVM are 400 threads, and on a 2-core
// machine shared with Pulsar and kop their network threads took 1.4 cores and starved
// kop (docs/benchmarks.md); franz-go's clients are goroutines over GOMAXPROCS threads.
//
// Producers share the offered rate, each sending records of recordBytes to random
// partitions of its topics at an even pace (acks=all, linger 5 ms). Consumers form
// `groups` groups; group g subscribes to the topics i with i % groups == g.
//
// Every everyS seconds one JSON line on stdout: the window's records sent, acknowledged
// and failed, produce latency p50/p99/max, records consumed, end-to-end p99 (the
// record's timestamp to its poll), partition assignments (a rebalance storm shows
// here), and consumers holding no partition. First a "ready" line once every consumer
// holds partitions; the window lines run for `seconds` after it; an "end" line last.
//
// Args: bootstrap topicPrefix topics partitions producers consumers groups ratePerS
//
//	recordBytes seconds everyS
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type window struct {
	mu                                 sync.Mutex
	produceMicros, e2eMillis           []int64
	sent, acked, failed, consumed, asg atomic.Int64
}

func (w *window) addLatency(us int64) {
	w.mu.Lock()
	w.produceMicros = append(w.produceMicros, us)
	w.mu.Unlock()
}

func (w *window) addE2E(ms []int64) {
	w.mu.Lock()
	w.e2eMillis = append(w.e2eMillis, ms...)
	w.mu.Unlock()
}

var (
	current   atomic.Pointer[window]
	errMu     sync.Mutex
	firstErrs = map[string]string{}
)

func noteError(err error) {
	errMu.Lock()
	defer errMu.Unlock()
	kind := fmt.Sprintf("%T", err)
	if _, ok := firstErrs[kind]; !ok {
		firstErrs[kind] = err.Error()
	}
}

func pct(xs []int64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
	i := int(q*float64(len(xs))+0.999999) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(xs) {
		i = len(xs) - 1
	}
	return float64(xs[i])
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bad argument:", s)
		os.Exit(2)
	}
	return n
}

func produce(ctx context.Context, cl *kgo.Client, topics []string, partitions int, perSecond float64, value []byte, done *sync.WaitGroup) {
	defer done.Done()
	rnd := rand.New(rand.NewSource(time.Now().UnixNano()))
	gap := time.Duration(1e9 / perSecond)
	next := time.Now().Add(time.Duration(rnd.Int63n(int64(gap) + 1)))
	for {
		now := time.Now()
		if now.Before(next) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(next.Sub(now)):
			}
			continue
		}
		next = next.Add(gap)
		if next.Before(now.Add(-time.Second)) { // behind by a second: do not burst
			next = now
		}
		rec := &kgo.Record{Topic: topics[rnd.Intn(len(topics))], Partition: int32(rnd.Intn(partitions)), Value: value}
		started := time.Now()
		current.Load().sent.Add(1)
		cl.Produce(context.Background(), rec, func(_ *kgo.Record, err error) {
			at := current.Load()
			if err != nil {
				at.failed.Add(1)
				noteError(err)
				return
			}
			at.acked.Add(1)
			at.addLatency(time.Since(started).Microseconds())
		})
	}
}

type receiver struct {
	cl   *kgo.Client
	held atomic.Int64
}

func newReceiver(bootstrap []string, name, group string, topics []string) *receiver {
	r := &receiver{}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(bootstrap...), kgo.ClientID(name), kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			for _, ps := range m {
				r.held.Add(int64(len(ps)))
			}
			current.Load().asg.Add(1)
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			for _, ps := range m {
				r.held.Add(-int64(len(ps)))
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			for _, ps := range m {
				r.held.Add(-int64(len(ps)))
			}
		}),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(1)
	}
	r.cl = cl
	return r
}

func (r *receiver) run(ctx context.Context, done *sync.WaitGroup) {
	defer done.Done()
	for ctx.Err() == nil {
		fs := r.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		fs.EachError(func(_ string, _ int32, err error) { noteError(err) })
		now := time.Now().UnixMilli()
		var e2e []int64
		fs.EachRecord(func(rec *kgo.Record) { e2e = append(e2e, now-rec.Timestamp.UnixMilli()) })
		if len(e2e) > 0 {
			w := current.Load()
			w.consumed.Add(int64(len(e2e)))
			w.addE2E(e2e)
		}
	}
}

func emit(v any) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

func main() {
	a := os.Args[1:]
	if len(a) != 11 {
		fmt.Fprintln(os.Stderr, "usage: load bootstrap prefix topics partitions producers consumers groups rate bytes seconds everyS")
		os.Exit(2)
	}
	bootstrap, prefix := strings.Split(a[0], ","), a[1]
	topics, partitions, producers, consumers, groups := atoi(a[2]), atoi(a[3]), atoi(a[4]), atoi(a[5]), atoi(a[6])
	rate, err := strconv.ParseFloat(a[7], 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bad rate:", a[7])
		os.Exit(2)
	}
	size, seconds, every := atoi(a[8]), atoi(a[9]), atoi(a[10])
	current.Store(&window{})
	all := make([]string, topics)
	for i := range all {
		all[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var consuming, producing sync.WaitGroup
	receivers := make([]*receiver, consumers)
	for i := range receivers {
		g := i % groups
		var mine []string
		for t := g; t < topics; t += groups {
			mine = append(mine, all[t])
		}
		receivers[i] = newReceiver(bootstrap, fmt.Sprintf("load-c%d", i), fmt.Sprintf("%s-group-%d", prefix, g), mine)
		consuming.Add(1)
		go receivers[i].run(ctx, &consuming)
	}
	idle := func() int {
		n := 0
		for _, r := range receivers {
			if r.held.Load() <= 0 {
				n++
			}
		}
		return n
	}
	readyBy := time.Now().Add(300 * time.Second)
	for idle() > 0 && time.Now().Before(readyBy) {
		time.Sleep(200 * time.Millisecond)
	}
	emit(map[string]any{"ready": true, "idle_consumers": idle()})

	value := make([]byte, size)
	rand.New(rand.NewSource(1)).Read(value)
	clients := make([]*kgo.Client, producers)
	for i := range clients {
		var mine []string
		for t := i % topics; t < topics; t += producers {
			mine = append(mine, all[t])
		}
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(bootstrap...), kgo.ClientID(fmt.Sprintf("load-p%d", i)),
			kgo.ProducerLinger(5*time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RecordDeliveryTimeout(120*time.Second),
		)
		if err != nil {
			fmt.Fprintln(os.Stderr, "producer:", err)
			os.Exit(1)
		}
		clients[i] = cl
		producing.Add(1)
		go produce(ctx, cl, mine, partitions, rate/float64(producers), value, &producing)
	}
	current.Store(&window{})
	start := time.Now()
	for n := 1; n <= seconds/every; n++ {
		time.Sleep(time.Until(start.Add(time.Duration(n*every) * time.Second)))
		w := current.Swap(&window{})
		time.Sleep(50 * time.Millisecond) // callbacks already running against the old window land
		w.mu.Lock()
		lat, e2e := w.produceMicros, w.e2eMillis
		w.mu.Unlock()
		emit(map[string]any{
			"t": n * every, "sent": w.sent.Load(), "acked": w.acked.Load(), "failed": w.failed.Load(),
			"p50_ms": pct(lat, 0.5) / 1000, "p99_ms": pct(lat, 0.99) / 1000, "max_ms": pct(lat, 1) / 1000,
			"consumed": w.consumed.Load(), "e2e_p99_ms": pct(e2e, 0.99),
			"assignments": w.asg.Load(), "idle_consumers": idle(),
		})
	}
	cancel()
	producing.Wait()
	flushCtx, stopFlush := context.WithTimeout(context.Background(), 30*time.Second)
	for _, cl := range clients {
		if err := cl.Flush(flushCtx); err != nil {
			noteError(err)
		}
		cl.Close()
	}
	stopFlush()
	consuming.Wait()
	for _, r := range receivers {
		r.cl.Close()
	}
	errMu.Lock()
	defer errMu.Unlock()
	emit(map[string]any{"end": true, "errors": firstErrs})
}
