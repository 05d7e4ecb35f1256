package main

// Sarama's transactional producer (Producer.Transaction.ID) in the flow of
// conformance/clients/transactional.py.

import (
	"time"

	"github.com/IBM/sarama"
)

func txnProducer(cmd Command) (sarama.SyncProducer, error) {
	cfg := config()
	cfg.Producer.Transaction.ID = cmd.TxnID
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1 // Sarama's requirement for idempotence
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	return sarama.NewSyncProducer([]string{cmd.Bootstrap}, cfg)
}

func txnRecord(cmd Command, partition int32, value string) *sarama.ProducerMessage {
	return &sarama.ProducerMessage{Topic: cmd.Topic, Partition: partition, Value: sarama.StringEncoder(value)}
}

// txnSend runs one transaction of values, value i to partition i % 2.
func txnSend(cmd Command, p sarama.SyncProducer, values []string, commit bool) error {
	if err := p.BeginTxn(); err != nil {
		return err
	}
	for i, v := range values {
		if _, _, err := p.SendMessage(txnRecord(cmd, int32(i%2), v)); err != nil {
			return err
		}
	}
	if commit {
		return p.CommitTxn()
	}
	return p.AbortTxn()
}

// txnFlow: c1 and c2 committed, a1 aborted, then a second producer with the same
// transactional id fences the first while its transaction (the zombie's record)
// is open, and commits c3. The answer is how the first one's next commit failed.
func txnFlow(cmd Command) (any, error) {
	first, err := txnProducer(cmd)
	if err != nil {
		return nil, err
	}
	defer first.Close()
	if err := txnSend(cmd, first, []string{"c1", "c2"}, true); err != nil {
		return nil, err
	}
	if err := txnSend(cmd, first, []string{"a1"}, false); err != nil {
		return nil, err
	}
	if err := first.BeginTxn(); err != nil {
		return nil, err
	}
	if _, _, err := first.SendMessage(txnRecord(cmd, 0, "zombie")); err != nil {
		return nil, err
	}
	second, err := txnProducer(cmd)
	if err != nil {
		return nil, err
	}
	defer second.Close()
	if err := second.BeginTxn(); err != nil {
		return nil, err
	}
	if _, _, err := second.SendMessage(txnRecord(cmd, 1, "c3")); err != nil {
		return nil, err
	}
	if err := second.CommitTxn(); err != nil {
		return nil, err
	}
	_, _, fenced := first.SendMessage(txnRecord(cmd, 1, "late"))
	if fenced == nil {
		fenced = first.CommitTxn()
	}
	if fenced == nil {
		return map[string]any{"fenced": "not fenced"}, nil
	}
	return map[string]any{"fenced": errName(fenced)}, nil
}
