// The conformance driver for Sarama (github.com/IBM/sarama): one JSON command
// on stdin, one JSON answer on stdout, using Sarama's producer, consumer,
// consumer group, client and cluster admin the way an application would (the
// default Config, so the default protocol Version). conformance/clients/
// go_clients.py builds and runs it.
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

	"github.com/IBM/sarama"

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
	// Sarama's calls take no context: past the deadline, answer and exit.
	go func() {
		time.Sleep(seconds(cmd.Timeout))
		final(map[string]any{"error": fmt.Sprintf("no answer within %.0f s", cmd.Timeout)})
		os.Exit(0)
	}()
	var out any
	switch cmd.Op {
	case "produce":
		out, err = produce(cmd)
	case "consume":
		out, err = consume(cmd)
	case "list_offset":
		out, err = listOffset(cmd)
	case "group_consume":
		out, err = groupConsume(cmd)
	case "committed":
		out, err = committed(cmd)
	case "txn_flow":
		out, err = txnFlow(cmd)
	default:
		err = fmt.Errorf("unknown op %q", cmd.Op)
	}
	if err != nil {
		final(map[string]any{"error": errName(err)})
		return
	}
	final(out)
}

var seconds = wire.Seconds

var (
	printing sync.Mutex
	finished bool
)

// answer prints one line of the answer.
func answer(v any) {
	printing.Lock()
	defer printing.Unlock()
	if finished {
		return
	}
	if err := json.NewEncoder(os.Stdout).Encode(v); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

// final prints the last line of the answer: nothing is printed after it (a
// second one, racing the deadline, is dropped).
func final(v any) {
	answer(v)
	printing.Lock()
	finished = true
	printing.Unlock()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(2)
}

// errName is the name Sarama gives an error: the KError or sentinel variable's
// name (ErrUnknownTopicOrPartition), else its text.
func errName(err error) string {
	var pes sarama.ProducerErrors
	if errors.As(err, &pes) && len(pes) > 0 {
		err = pes[0].Err
	}
	var ke sarama.KError
	if errors.As(err, &ke) {
		if name, ok := kerrNames[ke]; ok {
			return name
		}
		return fmt.Sprintf("KError(%d)", int16(ke))
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	return err.Error()
}

func config() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.ClientID = "conformance"
	return cfg
}

func codec(name string) (sarama.CompressionCodec, error) {
	switch name {
	case "", "none":
		return sarama.CompressionNone, nil
	case "gzip":
		return sarama.CompressionGZIP, nil
	case "snappy":
		return sarama.CompressionSnappy, nil
	case "lz4":
		return sarama.CompressionLZ4, nil
	case "zstd":
		return sarama.CompressionZSTD, nil
	}
	return 0, fmt.Errorf("unknown codec %q", name)
}

func produce(cmd Command) (any, error) {
	cfg := config()
	c, err := codec(cmd.Compression)
	if err != nil {
		return nil, err
	}
	cfg.Producer.Compression = c
	cfg.Producer.Partitioner = sarama.NewManualPartitioner // each record names its partition
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	if cmd.MaxRequest > 0 {
		cfg.Producer.MaxMessageBytes = int(cmd.MaxRequest)
	}
	if cmd.Idempotent {
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1 // Sarama's requirement for idempotence
	}
	producer, err := sarama.NewSyncProducer([]string{cmd.Bootstrap}, cfg)
	if err != nil {
		return nil, err
	}
	defer producer.Close()
	msgs := make([]*sarama.ProducerMessage, len(cmd.Records))
	for i, r := range cmd.Records {
		msg := &sarama.ProducerMessage{Topic: cmd.Topic, Partition: r.Partition}
		if r.Key != nil {
			msg.Key = sarama.ByteEncoder(r.Key)
		}
		if r.Value != nil {
			msg.Value = sarama.ByteEncoder(r.Value)
		}
		for _, h := range r.Headers {
			msg.Headers = append(msg.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
		}
		if r.Timestamp >= 0 {
			msg.Timestamp = time.UnixMilli(r.Timestamp)
		}
		msgs[i] = msg
	}
	if err := producer.SendMessages(msgs); err != nil {
		return nil, err
	}
	offsets := make([]int64, len(msgs))
	for i, m := range msgs {
		offsets[i] = m.Offset
	}
	return map[string]any{"offsets": offsets}, nil
}

func seen(m *sarama.ConsumerMessage) Rec {
	headers := []Header{}
	for _, h := range m.Headers {
		headers = append(headers, Header{Key: string(h.Key), Value: h.Value})
	}
	return Rec{
		Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value,
		Headers: headers, Timestamp: m.Timestamp.UnixMilli(),
	}
}

func consume(cmd Command) (any, error) {
	cfg := config()
	cfg.Consumer.Return.Errors = true
	consumer, err := sarama.NewConsumer([]string{cmd.Bootstrap}, cfg)
	if err != nil {
		return nil, err
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(cmd.Topic, cmd.Partition, cmd.Start)
	if err != nil {
		return nil, err
	}
	defer pc.Close()
	got := []Rec{}
	deadline := time.After(seconds(cmd.Within))
	for len(got) < cmd.N {
		select {
		case m := <-pc.Messages():
			got = append(got, seen(m))
		case e := <-pc.Errors():
			return nil, e.Err
		case <-deadline:
			return map[string]any{"records": got}, nil
		}
	}
	return map[string]any{"records": got}, nil
}

func listOffset(cmd Command) (any, error) {
	var (
		which string
		at    int64
	)
	if err := json.Unmarshal(cmd.Spec, &which); err != nil {
		if err := json.Unmarshal(cmd.Spec, &at); err != nil {
			return nil, fmt.Errorf("bad spec %s", cmd.Spec)
		}
	}
	switch which {
	case "earliest":
		at = sarama.OffsetOldest
	case "latest":
		at = sarama.OffsetNewest
	case "":
	default: // max-timestamp: Sarama has no way to ask (go_clients.py says so)
		return nil, fmt.Errorf("bad spec %s", cmd.Spec)
	}
	cl, err := sarama.NewClient([]string{cmd.Bootstrap}, config())
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	offset, err := cl.GetOffset(cmd.Topic, cmd.Partition, at)
	if err != nil {
		return nil, err
	}
	return map[string]any{"offset": offset}, nil
}

// taker is the group member's handler: it takes n records, marks the offsets
// after them, commits synchronously and ends the session.
type taker struct {
	n    int
	mu   sync.Mutex
	got  []Rec
	done chan struct{}
	once sync.Once
}

func (t *taker) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (t *taker) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (t *taker) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			t.mu.Lock()
			if len(t.got) < t.n {
				t.got = append(t.got, seen(m))
				sess.MarkMessage(m, "")
			}
			full := len(t.got) >= t.n
			t.mu.Unlock()
			if full {
				sess.Commit()
				t.once.Do(func() { close(t.done) })
				return nil
			}
		case <-sess.Context().Done():
			return nil
		}
	}
}

func groupConsume(cmd Command) (any, error) {
	cfg := config()
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Return.Errors = true
	group, err := sarama.NewConsumerGroup([]string{cmd.Bootstrap}, cmd.Group, cfg)
	if err != nil {
		return nil, err
	}
	var (
		errMu    sync.Mutex
		firstErr error
	)
	go func() {
		for e := range group.Errors() {
			errMu.Lock()
			if firstErr == nil {
				firstErr = e
			}
			errMu.Unlock()
		}
	}()
	t := &taker{n: cmd.N, done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), seconds(cmd.Within))
	defer cancel()
	go func() {
		select {
		case <-t.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	var consumeErr error
	for ctx.Err() == nil {
		if err := group.Consume(ctx, []string{cmd.Topic}, t); err != nil {
			consumeErr = err
			break
		}
	}
	closeErr := group.Close() // leaves the group
	errMu.Lock()
	defer errMu.Unlock()
	for _, err := range []error{consumeErr, firstErr, closeErr} {
		if err != nil {
			return nil, err
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	got := t.got
	if got == nil {
		got = []Rec{}
	}
	return map[string]any{"records": got}, nil
}

func committed(cmd Command) (any, error) {
	admin, err := sarama.NewClusterAdmin([]string{cmd.Bootstrap}, config())
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	resp, err := admin.ListConsumerGroupOffsets(cmd.Group, map[string][]int32{cmd.Topic: {cmd.Partition}})
	if err != nil {
		return nil, err
	}
	if !errors.Is(resp.Err, sarama.ErrNoError) {
		return nil, resp.Err
	}
	block := resp.GetBlock(cmd.Topic, cmd.Partition)
	if block == nil {
		return map[string]any{"offset": nil}, nil
	}
	if !errors.Is(block.Err, sarama.ErrNoError) {
		return nil, block.Err
	}
	if block.Offset < 0 {
		return map[string]any{"offset": nil}, nil
	}
	return map[string]any{"offset": block.Offset}, nil
}

// watcher is a member's handler: it reports the partitions of each session
// and reads (without committing) what they deliver.
type watcher struct{ report func([]int32) }

func (w *watcher) Setup(sess sarama.ConsumerGroupSession) error {
	now := []int32{}
	for _, ps := range sess.Claims() {
		now = append(now, ps...)
	}
	slices.Sort(now)
	w.report(now)
	return nil
}

func (w *watcher) Cleanup(sarama.ConsumerGroupSession) error {
	w.report([]int32{})
	return nil
}

func (w *watcher) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case _, ok := <-claim.Messages():
			if !ok {
				return nil
			}
		case <-sess.Context().Done():
			return nil
		}
	}
}

// member is a group member subscribed to the topic until stdin has a line or
// ends: it prints {"assigned": [...]} whenever its assignment changes (each
// session's claims), then leaves the group and prints {"left": true}; a failure
// the client reports ends it with {"error": name}.
func member(cmd Command, in *bufio.Reader) {
	cfg := config()
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Return.Errors = true
	group, err := sarama.NewConsumerGroup([]string{cmd.Bootstrap}, cmd.Group, cfg)
	if err != nil {
		final(map[string]any{"error": errName(err)})
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	go func() {
		_, _ = in.ReadBytes('\n') // a line, or the end of stdin: time to leave
		stop()
	}()
	failed := make(chan error, 1)
	fatal := func(err error) {
		select {
		case failed <- err:
		default:
		}
		stop()
	}
	go func() {
		for e := range group.Errors() {
			fatal(e)
		}
	}()
	var (
		mu   sync.Mutex
		last = []int32{}
	)
	answer(map[string]any{"assigned": last})
	w := &watcher{report: func(now []int32) {
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(now, last) {
			answer(map[string]any{"assigned": now})
			last = now
		}
	}}
	for ctx.Err() == nil {
		if err := group.Consume(ctx, []string{cmd.Topic}, w); err != nil {
			fatal(err)
		}
	}
	closeErr := group.Close() // leaves the group
	select {
	case err := <-failed:
		final(map[string]any{"error": errName(err)})
		return
	default:
	}
	if closeErr != nil {
		final(map[string]any{"error": errName(closeErr)})
		return
	}
	final(map[string]any{"left": true})
}

// The names of Sarama's error values, as declared in its errors.go (v1.61.1).
var kerrNames = map[sarama.KError]string{
	sarama.ErrUnknown:                            "ErrUnknown",
	sarama.ErrNoError:                            "ErrNoError",
	sarama.ErrOffsetOutOfRange:                   "ErrOffsetOutOfRange",
	sarama.ErrInvalidMessage:                     "ErrInvalidMessage",
	sarama.ErrUnknownTopicOrPartition:            "ErrUnknownTopicOrPartition",
	sarama.ErrInvalidMessageSize:                 "ErrInvalidMessageSize",
	sarama.ErrLeaderNotAvailable:                 "ErrLeaderNotAvailable",
	sarama.ErrNotLeaderForPartition:              "ErrNotLeaderForPartition",
	sarama.ErrRequestTimedOut:                    "ErrRequestTimedOut",
	sarama.ErrBrokerNotAvailable:                 "ErrBrokerNotAvailable",
	sarama.ErrReplicaNotAvailable:                "ErrReplicaNotAvailable",
	sarama.ErrMessageSizeTooLarge:                "ErrMessageSizeTooLarge",
	sarama.ErrStaleControllerEpochCode:           "ErrStaleControllerEpochCode",
	sarama.ErrOffsetMetadataTooLarge:             "ErrOffsetMetadataTooLarge",
	sarama.ErrNetworkException:                   "ErrNetworkException",
	sarama.ErrOffsetsLoadInProgress:              "ErrOffsetsLoadInProgress",
	sarama.ErrConsumerCoordinatorNotAvailable:    "ErrConsumerCoordinatorNotAvailable",
	sarama.ErrNotCoordinatorForConsumer:          "ErrNotCoordinatorForConsumer",
	sarama.ErrInvalidTopic:                       "ErrInvalidTopic",
	sarama.ErrMessageSetSizeTooLarge:             "ErrMessageSetSizeTooLarge",
	sarama.ErrNotEnoughReplicas:                  "ErrNotEnoughReplicas",
	sarama.ErrNotEnoughReplicasAfterAppend:       "ErrNotEnoughReplicasAfterAppend",
	sarama.ErrInvalidRequiredAcks:                "ErrInvalidRequiredAcks",
	sarama.ErrIllegalGeneration:                  "ErrIllegalGeneration",
	sarama.ErrInconsistentGroupProtocol:          "ErrInconsistentGroupProtocol",
	sarama.ErrInvalidGroupId:                     "ErrInvalidGroupId",
	sarama.ErrUnknownMemberId:                    "ErrUnknownMemberId",
	sarama.ErrInvalidSessionTimeout:              "ErrInvalidSessionTimeout",
	sarama.ErrRebalanceInProgress:                "ErrRebalanceInProgress",
	sarama.ErrInvalidCommitOffsetSize:            "ErrInvalidCommitOffsetSize",
	sarama.ErrTopicAuthorizationFailed:           "ErrTopicAuthorizationFailed",
	sarama.ErrGroupAuthorizationFailed:           "ErrGroupAuthorizationFailed",
	sarama.ErrClusterAuthorizationFailed:         "ErrClusterAuthorizationFailed",
	sarama.ErrInvalidTimestamp:                   "ErrInvalidTimestamp",
	sarama.ErrUnsupportedSASLMechanism:           "ErrUnsupportedSASLMechanism",
	sarama.ErrIllegalSASLState:                   "ErrIllegalSASLState",
	sarama.ErrUnsupportedVersion:                 "ErrUnsupportedVersion",
	sarama.ErrTopicAlreadyExists:                 "ErrTopicAlreadyExists",
	sarama.ErrInvalidPartitions:                  "ErrInvalidPartitions",
	sarama.ErrInvalidReplicationFactor:           "ErrInvalidReplicationFactor",
	sarama.ErrInvalidReplicaAssignment:           "ErrInvalidReplicaAssignment",
	sarama.ErrInvalidConfig:                      "ErrInvalidConfig",
	sarama.ErrNotController:                      "ErrNotController",
	sarama.ErrInvalidRequest:                     "ErrInvalidRequest",
	sarama.ErrUnsupportedForMessageFormat:        "ErrUnsupportedForMessageFormat",
	sarama.ErrPolicyViolation:                    "ErrPolicyViolation",
	sarama.ErrOutOfOrderSequenceNumber:           "ErrOutOfOrderSequenceNumber",
	sarama.ErrDuplicateSequenceNumber:            "ErrDuplicateSequenceNumber",
	sarama.ErrInvalidProducerEpoch:               "ErrInvalidProducerEpoch",
	sarama.ErrInvalidTxnState:                    "ErrInvalidTxnState",
	sarama.ErrInvalidProducerIDMapping:           "ErrInvalidProducerIDMapping",
	sarama.ErrInvalidTransactionTimeout:          "ErrInvalidTransactionTimeout",
	sarama.ErrConcurrentTransactions:             "ErrConcurrentTransactions",
	sarama.ErrTransactionCoordinatorFenced:       "ErrTransactionCoordinatorFenced",
	sarama.ErrTransactionalIDAuthorizationFailed: "ErrTransactionalIDAuthorizationFailed",
	sarama.ErrSecurityDisabled:                   "ErrSecurityDisabled",
	sarama.ErrOperationNotAttempted:              "ErrOperationNotAttempted",
	sarama.ErrKafkaStorageError:                  "ErrKafkaStorageError",
	sarama.ErrLogDirNotFound:                     "ErrLogDirNotFound",
	sarama.ErrSASLAuthenticationFailed:           "ErrSASLAuthenticationFailed",
	sarama.ErrUnknownProducerID:                  "ErrUnknownProducerID",
	sarama.ErrReassignmentInProgress:             "ErrReassignmentInProgress",
	sarama.ErrDelegationTokenAuthDisabled:        "ErrDelegationTokenAuthDisabled",
	sarama.ErrDelegationTokenNotFound:            "ErrDelegationTokenNotFound",
	sarama.ErrDelegationTokenOwnerMismatch:       "ErrDelegationTokenOwnerMismatch",
	sarama.ErrDelegationTokenRequestNotAllowed:   "ErrDelegationTokenRequestNotAllowed",
	sarama.ErrDelegationTokenAuthorizationFailed: "ErrDelegationTokenAuthorizationFailed",
	sarama.ErrDelegationTokenExpired:             "ErrDelegationTokenExpired",
	sarama.ErrInvalidPrincipalType:               "ErrInvalidPrincipalType",
	sarama.ErrNonEmptyGroup:                      "ErrNonEmptyGroup",
	sarama.ErrGroupIDNotFound:                    "ErrGroupIDNotFound",
	sarama.ErrFetchSessionIDNotFound:             "ErrFetchSessionIDNotFound",
	sarama.ErrInvalidFetchSessionEpoch:           "ErrInvalidFetchSessionEpoch",
	sarama.ErrListenerNotFound:                   "ErrListenerNotFound",
	sarama.ErrTopicDeletionDisabled:              "ErrTopicDeletionDisabled",
	sarama.ErrFencedLeaderEpoch:                  "ErrFencedLeaderEpoch",
	sarama.ErrUnknownLeaderEpoch:                 "ErrUnknownLeaderEpoch",
	sarama.ErrUnsupportedCompressionType:         "ErrUnsupportedCompressionType",
	sarama.ErrStaleBrokerEpoch:                   "ErrStaleBrokerEpoch",
	sarama.ErrOffsetNotAvailable:                 "ErrOffsetNotAvailable",
	sarama.ErrMemberIdRequired:                   "ErrMemberIdRequired",
	sarama.ErrPreferredLeaderNotAvailable:        "ErrPreferredLeaderNotAvailable",
	sarama.ErrGroupMaxSizeReached:                "ErrGroupMaxSizeReached",
	sarama.ErrFencedInstancedId:                  "ErrFencedInstancedId",
	sarama.ErrEligibleLeadersNotAvailable:        "ErrEligibleLeadersNotAvailable",
	sarama.ErrElectionNotNeeded:                  "ErrElectionNotNeeded",
	sarama.ErrNoReassignmentInProgress:           "ErrNoReassignmentInProgress",
	sarama.ErrGroupSubscribedToTopic:             "ErrGroupSubscribedToTopic",
	sarama.ErrInvalidRecord:                      "ErrInvalidRecord",
	sarama.ErrUnstableOffsetCommit:               "ErrUnstableOffsetCommit",
	sarama.ErrThrottlingQuotaExceeded:            "ErrThrottlingQuotaExceeded",
	sarama.ErrProducerFenced:                     "ErrProducerFenced",
	sarama.ErrInvalidUpdateVersion:               "ErrInvalidUpdateVersion",
}

var sentinels = []struct {
	err  error
	name string
}{
	{sarama.ErrAddPartitionsToTxn, "ErrAddPartitionsToTxn"},
	{sarama.ErrAlreadyConnected, "ErrAlreadyConnected"},
	{sarama.ErrBrokerNotFound, "ErrBrokerNotFound"},
	{sarama.ErrCannotTransitionNilError, "ErrCannotTransitionNilError"},
	{sarama.ErrClosedClient, "ErrClosedClient"},
	{sarama.ErrClosedConsumerGroup, "ErrClosedConsumerGroup"},
	{sarama.ErrConsumerOffsetNotAdvanced, "ErrConsumerOffsetNotAdvanced"},
	{sarama.ErrConsumerRetriesExhausted, "ErrConsumerRetriesExhausted"},
	{sarama.ErrControllerNotAvailable, "ErrControllerNotAvailable"},
	{sarama.ErrCreateACLs, "ErrCreateACLs"},
	{sarama.ErrDecompressedBatchTooLarge, "ErrDecompressedBatchTooLarge"},
	{sarama.ErrDeleteRecords, "ErrDeleteRecords"},
	{sarama.ErrIncompleteResponse, "ErrIncompleteResponse"},
	{sarama.ErrInsufficientData, "ErrInsufficientData"},
	{sarama.ErrInvalidPartition, "ErrInvalidPartition"},
	{sarama.ErrMessageTooLarge, "ErrMessageTooLarge"},
	{sarama.ErrNoTopicsToUpdateMetadata, "ErrNoTopicsToUpdateMetadata"},
	{sarama.ErrNonTransactedProducer, "ErrNonTransactedProducer"},
	{sarama.ErrNotConnected, "ErrNotConnected"},
	{sarama.ErrOutOfBrokers, "ErrOutOfBrokers"},
	{sarama.ErrProducerRetryBufferOverflow, "ErrProducerRetryBufferOverflow"},
	{sarama.ErrReassignPartitions, "ErrReassignPartitions"},
	{sarama.ErrRebalanceTimedOut, "ErrRebalanceTimedOut"},
	{sarama.ErrSessionConsumeClaimExited, "ErrSessionConsumeClaimExited"},
	{sarama.ErrSessionHeartbeatFailed, "ErrSessionHeartbeatFailed"},
	{sarama.ErrSessionPartitionCountChanged, "ErrSessionPartitionCountChanged"},
	{sarama.ErrShuttingDown, "ErrShuttingDown"},
	{sarama.ErrTransactionNotReady, "ErrTransactionNotReady"},
	{sarama.ErrTransitionNotAllowed, "ErrTransitionNotAllowed"},
	{sarama.ErrTxnOffsetCommit, "ErrTxnOffsetCommit"},
	{sarama.ErrTxnUnableToParseResponse, "ErrTxnUnableToParseResponse"},
	{sarama.ErrUnknownMessage, "ErrUnknownMessage"},
	{sarama.ErrUnknownScramMechanism, "ErrUnknownScramMechanism"},
}
