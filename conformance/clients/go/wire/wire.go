// Package wire is what the Go conformance drivers share: the JSON form of a
// command and of a record (bytes as base64, null kept apart from empty), as
// conformance/clients/program.py writes and reads them.
package wire

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Bytes is a []byte that is base64 in JSON and keeps null apart from empty.
type Bytes []byte

func (b Bytes) MarshalJSON() ([]byte, error) {
	if b == nil {
		return []byte("null"), nil
	}
	return json.Marshal(base64.StdEncoding.EncodeToString(b))
}

func (b *Bytes) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*b = nil
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	*b = append(Bytes{}, raw...) // never nil: an empty value is not a null one
	return nil
}

// Header is [name, value] in JSON.
type Header struct {
	Key   string
	Value Bytes
}

func (h Header) MarshalJSON() ([]byte, error) { return json.Marshal([]any{h.Key, h.Value}) }

func (h *Header) UnmarshalJSON(data []byte) error {
	var pair []json.RawMessage
	if err := json.Unmarshal(data, &pair); err != nil {
		return err
	}
	if len(pair) != 2 {
		return fmt.Errorf("a header is [name, value], got %s", data)
	}
	if err := json.Unmarshal(pair[0], &h.Key); err != nil {
		return err
	}
	return json.Unmarshal(pair[1], &h.Value)
}

type Rec struct {
	Partition int32    `json:"partition"`
	Offset    int64    `json:"offset"`
	Key       Bytes    `json:"key"`
	Value     Bytes    `json:"value"`
	Headers   []Header `json:"headers"`
	Timestamp int64    `json:"timestamp"` // ms; -1 on produce: the client's clock
}

type Command struct {
	Op          string          `json:"op"`
	Bootstrap   string          `json:"bootstrap"`
	Topic       string          `json:"topic"`
	Records     []Rec           `json:"records"`
	Compression string          `json:"compression"`
	Idempotent  bool            `json:"idempotent"`
	Partition   int32           `json:"partition"`
	Start       int64           `json:"start"`
	N           int             `json:"n"`
	Within      float64         `json:"within"` // seconds to wait for records
	Spec        json.RawMessage `json:"spec"`
	Group       string          `json:"group"`
	Timeout     float64         `json:"timeout"` // seconds for the whole command
	MaxRequest  int32           `json:"max_request_bytes"`
	TxnID       string          `json:"transactional_id"`
	Output      string          `json:"output"`   // a read-process-write's output topic
	Protocol    string          `json:"protocol"` // a group member's: "consumer" is KIP-848's
}

// Seconds turns a JSON number of seconds into a Duration.
func Seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// ReadCommand reads the one command a driver gets, from the first line of stdin
// (a group member keeps reading stdin after it, to learn when to leave).
func ReadCommand(in *bufio.Reader) (Command, error) {
	var cmd Command
	line, err := in.ReadBytes('\n')
	if err != nil && err != io.EOF {
		return cmd, err
	}
	if err := json.Unmarshal(line, &cmd); err != nil {
		return cmd, fmt.Errorf("bad command: %w", err)
	}
	if cmd.Timeout <= 0 {
		cmd.Timeout = 60
	}
	return cmd, nil
}
