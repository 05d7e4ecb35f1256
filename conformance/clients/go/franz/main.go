// The conformance driver for franz-go (github.com/twmb/franz-go): one JSON
// command on stdin, one JSON answer on stdout, using kgo and kadm the way an
// application would. conformance/clients/go_clients.py builds and runs it.
package main

import (
	"bufio"
	"context"

	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"kop/conformance/wire"
)

// The wire types, shared with the other Go driver.
type (
	Bytes   = wire.Bytes
	Header  = wire.Header
	Rec     = wire.Rec
	Command = wire.Command
)

func main() {
	in := bufio.NewReader(os.Stdin)
	cmd, err := wire.ReadCommand(in)
	if err != nil {
		fail(err)
	}
	if cmd.Op == "member" {
		member(cmd, in)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), seconds(cmd.Timeout))
	defer cancel()
	var out any
	switch cmd.Op {
	case "produce":
		out, err = produce(ctx, cmd)
	case "consume":
		out, err = consume(ctx, cmd)
	case "list_offset":
		out, err = listOffset(ctx, cmd)
	case "group_consume":
		out, err = groupConsume(ctx, cmd)
	case "committed":
		out, err = committed(ctx, cmd)
	case "txn_flow":
		out, err = txnFlow(ctx, cmd)
	case "group_transact":
		out, err = groupTransact(ctx, cmd)
	default:
		err = fmt.Errorf("unknown op %q", cmd.Op)
	}
	if err != nil {
		answer(map[string]any{"error": errName(err)})
		return
	}
	answer(out)
}

var seconds = wire.Seconds

// answering keeps lines whole: a member's callbacks answer from kgo's goroutines.
var answering sync.Mutex

func answer(v any) {
	answering.Lock()
	defer answering.Unlock()
	if err := json.NewEncoder(os.Stdout).Encode(v); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(2)
}

// errName is the name franz-go gives an error: kerr's Kafka error name, else its text.
func errName(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}

func client(cmd Command, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cmd.Bootstrap)}, opts...)...)
}

func codec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "", "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("unknown codec %q", name)
}

func produce(ctx context.Context, cmd Command) (any, error) {
	c, err := codec(cmd.Compression)
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{
		kgo.RecordPartitioner(kgo.ManualPartitioner()), // each record names its partition
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(c),
		kgo.ProducerLinger(5 * time.Millisecond),
	}
	if cmd.MaxRequest > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(cmd.MaxRequest))
	}
	if !cmd.Idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := client(cmd, opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	recs := make([]*kgo.Record, len(cmd.Records))
	for i, r := range cmd.Records {
		rec := &kgo.Record{Topic: cmd.Topic, Partition: r.Partition, Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		if r.Timestamp >= 0 {
			rec.Timestamp = time.UnixMilli(r.Timestamp)
		}
		recs[i] = rec
	}
	results := cl.ProduceSync(ctx, recs...)
	if err := results.FirstErr(); err != nil {
		return nil, err
	}
	offsets := make([]int64, len(recs)) // results come in completion order, not ours
	for i, rec := range recs {
		offsets[i] = rec.Offset
	}
	return map[string]any{"offsets": offsets}, nil
}

func seen(r *kgo.Record) Rec {
	headers := []Header{}
	for _, h := range r.Headers {
		headers = append(headers, Header{Key: h.Key, Value: h.Value})
	}
	return Rec{
		Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value,
		Headers: headers, Timestamp: r.Timestamp.UnixMilli(),
	}
}

// poll takes up to n records within `within`: fewer after that, or the first
// error the client reports.
func poll(ctx context.Context, cl *kgo.Client, n int, within float64) ([]Rec, []*kgo.Record, error) {
	pctx, cancel := context.WithTimeout(ctx, seconds(within))
	defer cancel()
	got, raw := []Rec{}, []*kgo.Record{}
	for len(got) < n && pctx.Err() == nil {
		fetches := cl.PollRecords(pctx, n-len(got))
		for _, fe := range fetches.Errors() {
			if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
				continue
			}
			return nil, nil, fe.Err
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if len(got) < n {
				got = append(got, seen(r))
				raw = append(raw, r)
			}
		})
	}
	return got, raw, nil
}

func consume(ctx context.Context, cmd Command) (any, error) {
	at := map[string]map[int32]kgo.Offset{
		cmd.Topic: {cmd.Partition: kgo.NewOffset().At(cmd.Start)},
	}
	cl, err := client(cmd, kgo.ConsumePartitions(at))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	got, _, err := poll(ctx, cl, cmd.N, cmd.Within)
	if err != nil {
		return nil, err
	}
	return map[string]any{"records": got}, nil
}

func listOffset(ctx context.Context, cmd Command) (any, error) {
	cl, err := client(cmd)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var (
		which string
		ms    int64
	)
	if err := json.Unmarshal(cmd.Spec, &which); err != nil {
		if err := json.Unmarshal(cmd.Spec, &ms); err != nil {
			return nil, fmt.Errorf("bad spec %s", cmd.Spec)
		}
	}
	var listed kadm.ListedOffsets
	switch which {
	case "earliest":
		listed, err = adm.ListStartOffsets(ctx, cmd.Topic)
	case "latest":
		listed, err = adm.ListEndOffsets(ctx, cmd.Topic)
	case "max-timestamp":
		listed, err = adm.ListMaxTimestampOffsets(ctx, cmd.Topic)
	case "":
		listed, err = adm.ListOffsetsAfterMilli(ctx, ms, cmd.Topic)
	default:
		return nil, fmt.Errorf("bad spec %s", cmd.Spec)
	}
	if err != nil {
		return nil, err
	}
	if topicErr, ok := listed.Lookup(cmd.Topic, -1); ok && topicErr.Err != nil {
		return nil, topicErr.Err
	}
	got, ok := listed.Lookup(cmd.Topic, cmd.Partition)
	if !ok {
		return nil, kerr.UnknownTopicOrPartition
	}
	if got.Err != nil {
		return nil, got.Err
	}
	return map[string]any{"offset": got.Offset}, nil
}

func groupConsume(ctx context.Context, cmd Command) (any, error) {
	cl, err := client(cmd,
		kgo.ConsumerGroup(cmd.Group),
		kgo.ConsumeTopics(cmd.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
	)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	got, raw, err := poll(ctx, cl, cmd.N, cmd.Within)
	if err != nil {
		return nil, err
	}
	if len(raw) > 0 {
		if err := cl.CommitRecords(ctx, raw...); err != nil {
			return nil, err
		}
	}
	if err := cl.LeaveGroupContext(ctx); err != nil {
		return nil, err
	}
	return map[string]any{"records": got}, nil
}

func committed(ctx context.Context, cmd Command) (any, error) {
	cl, err := client(cmd)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	fetched, err := kadm.NewClient(cl).FetchOffsets(ctx, cmd.Group)
	if err != nil {
		return nil, err
	}
	got, ok := fetched.Lookup(cmd.Topic, cmd.Partition)
	if ok && got.Err != nil {
		return nil, got.Err
	}
	if !ok || got.At < 0 {
		return map[string]any{"offset": nil}, nil
	}
	return map[string]any{"offset": got.At}, nil
}

// member is a group member subscribed to the topic until stdin has a line or
// ends: it prints {"assigned": [...]} whenever its assignment changes (checked
// after each poll) and {"revoked": [...]} for each revocation, then leaves the
// group and prints {"left": true}; a failure the client reports ends it with
// {"error": name}. With the "consumer" protocol it is a KIP-848 member (the
// broker assigns; kgo needs a cooperative balancer first to opt in).
func member(cmd Command, in *bufio.Reader) {
	var (
		mu       sync.Mutex
		assigned = map[int32]bool{}
	)
	change := func(ps map[string][]int32, to bool) {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range ps[cmd.Topic] {
			if to {
				assigned[p] = true
			} else {
				delete(assigned, p)
			}
		}
	}
	opts := []kgo.Opt{
		kgo.ConsumerGroup(cmd.Group),
		kgo.ConsumeTopics(cmd.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			change(ps, true)
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			if revoked := slices.Sorted(slices.Values(ps[cmd.Topic])); len(revoked) > 0 {
				answer(map[string]any{"revoked": revoked})
			}
			change(ps, false)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			change(ps, false)
		}),
	}
	switch cmd.Protocol {
	case "", "classic":
	case "consumer":
		opts = append(opts, kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.ServerSideBalancer())
	default:
		answer(map[string]any{"error": "UNSUPPORTED: group protocol " + cmd.Protocol})
		return
	}
	cl, err := client(cmd, opts...)
	if err != nil {
		answer(map[string]any{"error": errName(err)})
		return
	}
	defer cl.Close()
	ctx, stop := context.WithCancel(context.Background())
	go func() {
		_, _ = in.ReadBytes('\n') // a line, or the end of stdin: time to leave
		stop()
	}()
	last := []int32{}
	answer(map[string]any{"assigned": last})
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fetches := cl.PollFetches(pctx)
		cancel()
		for _, fe := range fetches.Errors() {
			if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
				continue
			}
			answer(map[string]any{"error": errName(fe.Err)})
			return
		}
		mu.Lock()
		now := []int32{}
		for p := range assigned {
			now = append(now, p)
		}
		mu.Unlock()
		slices.Sort(now)
		if !slices.Equal(now, last) {
			answer(map[string]any{"assigned": now})
			last = now
		}
	}
	lctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.LeaveGroupContext(lctx); err != nil {
		answer(map[string]any{"error": errName(err)})
		return
	}
	answer(map[string]any{"left": true})
}
