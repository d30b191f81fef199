package wire

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
)

// Records are what apply keeps of its own deliveries in its bucket, beside the lock: the
// accounts file last delivered and its principals, the account versions pushed.

// A record too large for one message (the principals of a large mesh, the issue times of its
// accounts) is kept in parts, key.1, key.2, …, under a head that names their count and digest:
// a reader that finds them disagree (a write stopped half way) reads nothing rather than a mix.
type recordHead struct {
	Parts  int    `json:"parts"`
	Digest string `json:"digest"`
}

// PutRecord writes data under key in apply's bucket, in parts the account's payload limit takes.
func PutRecord(ctx context.Context, js jetstream.JetStream, key string, data []byte) error {
	kv, err := StateBucket(ctx, js)
	if err != nil {
		return fmt.Errorf("record %s in %s: %w", key, compiler.ApplyBucket, Explain(err))
	}
	part := 512 << 10
	if max := int(js.Conn().MaxPayload()) - 4096; max > 0 && max < part {
		part = max
	}
	head := recordHead{Digest: Digest(data)}
	for off := 0; off < len(data) || head.Parts == 0; off += part {
		head.Parts++
		if _, err := kv.Put(ctx, fmt.Sprintf("%s.%d", key, head.Parts), data[off:min(off+part, len(data))]); err != nil {
			return fmt.Errorf("record %s in %s: %w", key, compiler.ApplyBucket, Explain(err))
		}
	}
	h, _ := json.Marshal(head)
	if _, err := kv.Put(ctx, key, h); err != nil {
		return fmt.Errorf("record %s in %s: %w", key, compiler.ApplyBucket, Explain(err))
	}
	return nil
}

// GetRecord reads what PutRecord wrote; nil, nil when nothing (or nothing whole) is recorded.
func GetRecord(ctx context.Context, js jetstream.JetStream, key string) ([]byte, error) {
	kv, err := OpenBucket(ctx, js, BucketTiming{})
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	entry, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var head recordHead
	if json.Unmarshal(entry.Value(), &head) != nil || head.Parts <= 0 {
		return nil, nil
	}
	var data []byte
	for i := 1; i <= head.Parts; i++ {
		e, err := kv.Get(ctx, fmt.Sprintf("%s.%d", key, i))
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		data = append(data, e.Value()...)
	}
	if Digest(data) != head.Digest {
		return nil, nil
	}
	return data, nil
}

// Digest names bytes as apply's records do: a record's in its head, a delivered accounts file's.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
