package main

// Transactions as franz-go applications use them: the plain transactional
// client (commit, abort, a fenced zombie) and GroupTransactSession, kgo's
// exactly-once read-process-write loop.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kgo"
)

func txnClient(cmd Command) (*kgo.Client, error) {
	return client(cmd,
		kgo.TransactionalID(cmd.TxnID),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DefaultProduceTopic(cmd.Topic),
	)
}

// txnSend runs one transaction of values, value i to partition i % 2.
func txnSend(ctx context.Context, cl *kgo.Client, values []string, commit bool) error {
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	for i, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 2), Value: []byte(v)}).FirstErr(); err != nil {
			return err
		}
	}
	end := kgo.TryAbort
	if commit {
		end = kgo.TryCommit
	}
	return cl.EndTransaction(ctx, end)
}

// txnFlow is the flow of conformance/clients/transactional.py: c1 and c2
// committed, a1 aborted, then a second client with the same transactional id
// fences the first while its transaction (the zombie's record) is open, and
// commits c3. The answer is how the first one's next commit failed.
func txnFlow(ctx context.Context, cmd Command) (any, error) {
	first, err := txnClient(cmd)
	if err != nil {
		return nil, err
	}
	defer first.Close()
	if err := txnSend(ctx, first, []string{"c1", "c2"}, true); err != nil {
		return nil, err
	}
	if err := txnSend(ctx, first, []string{"a1"}, false); err != nil {
		return nil, err
	}
	if err := first.BeginTransaction(); err != nil {
		return nil, err
	}
	if err := first.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("zombie")}).FirstErr(); err != nil {
		return nil, err
	}
	second, err := txnClient(cmd)
	if err != nil {
		return nil, err
	}
	defer second.Close()
	if err := second.BeginTransaction(); err != nil {
		return nil, err
	}
	if err := second.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("c3")}).FirstErr(); err != nil {
		return nil, err
	}
	if err := second.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return nil, err
	}
	fenced := first.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("late")}).FirstErr()
	if fenced == nil {
		fenced = first.EndTransaction(ctx, kgo.TryCommit)
	}
	if fenced == nil {
		return map[string]any{"fenced": "not fenced"}, nil
	}
	return map[string]any{"fenced": errName(fenced)}, nil
}

// groupTransact copies the group's input topic to the output topic ("out-" and
// the value, the same partition), each poll's records and the group's offsets
// in one transaction, until n records are committed; then leaves the group.
func groupTransact(ctx context.Context, cmd Command) (any, error) {
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(cmd.Bootstrap),
		kgo.TransactionalID(cmd.TxnID),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumerGroup(cmd.Group),
		kgo.ConsumeTopics(cmd.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RequireStableFetchOffsets(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	copied, transactions := 0, 0
	for copied < cmd.N {
		fetches := sess.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			return nil, errs[0].Err
		}
		if err := sess.Begin(); err != nil {
			return nil, err
		}
		records := fetches.Records()
		for _, r := range records {
			out := &kgo.Record{Topic: cmd.Output, Partition: r.Partition, Value: append([]byte("out-"), r.Value...)}
			if err := sess.ProduceSync(ctx, out).FirstErr(); err != nil {
				return nil, err
			}
		}
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			return nil, err
		}
		if !committed {
			return nil, errors.New("a transaction of the session aborted")
		}
		copied += len(records)
		transactions++
	}
	return map[string]any{"copied": copied, "transactions": transactions > 0}, nil
}
