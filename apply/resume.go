package apply

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/meshc-dev/meshc/apply/wire"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/meshc-dev/meshc/change"
)

// Resume points live on the stream whose consumer they resume (change/resume.go says why). Each
// round of consumer changes pauses the consumers it replaces and reads them again (settle.go),
// records their points first, one metadata edit per stream, then deletes and makes the
// consumers, then removes the points it used, again one edit per stream: a handful of stream
// updates however many consumers are replaced.

// resumeChunk bounds the points one round has on one stream: the server refuses a stream whose
// metadata passes 128 KiB (JSMaxMetadataLen), and a point with a long consumer name takes about
// 400 bytes. A point an earlier apply left for a consumer this one makes again counts too: it
// stays on the stream until its round is done.
const resumeChunk = 200

// rounds splits the consumer changes so no round has more than resumeChunk points on one
// stream; the first round carries every change that has none.
func rounds(changes []change.Change) [][]change.Change {
	var out [][]change.Change
	perStream := map[string]int{}
	for _, c := range changes {
		i := 0
		if c.Action == change.Replace || c.ResumeRecorded {
			i = perStream[c.Stream] / resumeChunk
			perStream[c.Stream]++
		}
		for len(out) <= i {
			out = append(out, nil)
		}
		out[i] = append(out[i], c)
	}
	return out
}

// consumers applies the consumer changes round by round, and returns the replaces it refused
// because the old consumer would deliver again what it acknowledged (settle.go): those are left
// as they are, the rest applied. The stale points the plan listed are removed in the same edit
// as a round's points are recorded, before it: left to the end, enough of them (applies killed
// in their rounds) outgrew the 128 KiB a stream's metadata may hold, and every rerun's first
// record was refused before the cleanup could run.
func (a *applier) consumers(ctx context.Context, changes []change.Change, stale []change.StaleResume) ([]string, error) {
	staleOn := map[string][]string{}
	for _, s := range stale {
		staleOn[s.Stream] = append(staleOn[s.Stream], change.ResumePoint{Consumer: s.Consumer}.Key())
	}
	var refused []string
	for _, round := range rounds(changes) {
		var replaces []change.Change
		for _, c := range round {
			if c.Action == change.Replace {
				replaces = append(replaces, c)
			}
		}
		points, err := a.settle(ctx, replaces)
		if err != nil {
			for _, c := range round {
				a.report(c, err)
			}
			return refused, err
		}
		record := map[string][]change.ResumePoint{}
		var kept []change.Change
		for _, c := range round {
			if c.Action != change.Replace {
				kept = append(kept, c)
				continue
			}
			s := points[c.Name()]
			if s.refused != "" {
				refused = append(refused, s.refused)
				a.report(c, errors.New(s.refused))
				continue
			}
			r := s.point
			r.Recorded = time.Now().UTC()
			record[c.Stream] = append(record[c.Stream], r)
			kept = append(kept, c)
		}
		round = kept
		if err := a.eachStream(ctx, record, func(ctx context.Context, stream string, points []change.ResumePoint) error {
			// Where the replacements start is on the stream before the old ones are gone.
			if err := a.editMetadata(ctx, stream, func(md map[string]string) {
				for _, k := range staleOn[stream] {
					delete(md, k)
				}
				for _, r := range points {
					md[r.Key()] = r.Value()
				}
			}); err != nil {
				return fmt.Errorf("replace consumers on %s: record where they resume before deleting them: %w; nothing was deleted", stream, wire.Explain(err))
			}
			return nil
		}); err != nil {
			// Paused for nothing: they deliver again now, not when their pause runs out.
			a.unpause(context.WithoutCancel(ctx), replaces)
			for _, c := range round {
				a.report(c, err)
			}
			return refused, err
		}

		var mu sync.Mutex
		used := map[string][]change.ResumePoint{}
		err = a.concurrently(ctx, round, func(ctx context.Context, c change.Change) error {
			var point *change.ResumePoint
			if c.Action == change.Replace {
				p := points[c.Name()].point
				point = &p
			}
			if err := a.consumer(ctx, c, point); err != nil {
				return err
			}
			if c.Action == change.Replace || c.ResumeRecorded {
				mu.Lock()
				used[c.Stream] = append(used[c.Stream], change.ResumePoint{Stream: c.Stream, Consumer: c.Consumer})
				mu.Unlock()
			}
			return nil
		})
		// Points whose consumer exists again are removed even when another change failed: left
		// behind they would be stale, and the next plan would say so.
		a.forget(context.WithoutCancel(ctx), used, "exists again")
		if err != nil {
			return refused, err
		}
	}
	return refused, nil
}

// forgetStale removes the stale resume points the plan listed.
func (a *applier) forgetStale(ctx context.Context, stale []change.StaleResume) error {
	byStream := map[string][]change.ResumePoint{}
	for _, s := range stale {
		byStream[s.Stream] = append(byStream[s.Stream], change.ResumePoint{Stream: s.Stream, Consumer: s.Consumer})
	}
	return a.eachStream(ctx, byStream, func(ctx context.Context, stream string, points []change.ResumePoint) error {
		err := a.editMetadata(ctx, stream, func(md map[string]string) {
			for _, r := range points {
				delete(md, r.Key())
			}
		})
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil // its points went with it
		}
		if err != nil {
			return fmt.Errorf("remove the stale resume points on stream %s: %w", stream, wire.Explain(err))
		}
		return nil
	})
}

// forget removes points whose consumer exists again. Failing to is not failing the change: the
// point is then stale, and the next plan lists it for removal.
func (a *applier) forget(ctx context.Context, used map[string][]change.ResumePoint, why string) {
	_ = a.eachStream(ctx, used, func(ctx context.Context, stream string, points []change.ResumePoint) error {
		err := a.editMetadata(ctx, stream, func(md map[string]string) {
			for _, r := range points {
				delete(md, r.Key())
			}
		})
		if err != nil {
			var names []string
			for _, r := range points {
				names = append(names, r.Consumer)
			}
			a.note(fmt.Sprintf("the consumers %s on %s %s, but their resume points could not be removed (%v): they are stale, and the next apply removes them", strings.Join(names, ", "), stream, why, wire.Explain(err)))
		}
		return nil
	})
}

// eachStream runs op once per stream, streams concurrently.
func (a *applier) eachStream(ctx context.Context, byStream map[string][]change.ResumePoint, op func(ctx context.Context, stream string, points []change.ResumePoint) error) error {
	streams := slices.Sorted(maps.Keys(byStream))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(a.opts.Concurrency)
	for _, s := range streams {
		g.Go(func() error { return op(gctx, s, byStream[s]) })
	}
	return g.Wait()
}

// editMetadata changes a stream's metadata on the configuration the server holds at that
// moment, read just before, so nothing else of the stream changes.
func (a *applier) editMetadata(ctx context.Context, stream string, edit func(md map[string]string)) error {
	_, err := a.editStream(ctx, stream, func(cfg *jetstream.StreamConfig) {
		md := maps.Clone(cfg.Metadata)
		if md == nil {
			md = map[string]string{}
		}
		edit(md)
		cfg.Metadata = md
	})
	return err
}

// editStream changes a stream's configuration as the server holds it at that moment (read just
// before), and returns the stream's state after: the update's answer when there was one. The
// server's own `_nats.*` metadata is left to the server.
func (a *applier) editStream(ctx context.Context, stream string, edit func(cfg *jetstream.StreamConfig)) (*jetstream.StreamInfo, error) {
	var info *jetstream.StreamInfo
	err := a.call(ctx, func(ctx context.Context) error {
		s, err := a.js.Stream(ctx, stream)
		if err != nil {
			return err
		}
		cfg := s.CachedInfo().Config
		md := map[string]string{}
		for k, v := range cfg.Metadata {
			if !strings.HasPrefix(k, "_nats.") {
				md[k] = v
			}
		}
		cfg.Metadata = md
		before := cfg
		before.Metadata = maps.Clone(md)
		before.Subjects = slices.Clone(cfg.Subjects)
		edit(&cfg)
		if maps.Equal(before.Metadata, cfg.Metadata) && slices.Equal(before.Subjects, cfg.Subjects) {
			info = s.CachedInfo()
			return nil
		}
		updated, err := a.js.UpdateStream(ctx, cfg)
		if err != nil {
			return err
		}
		info = updated.CachedInfo()
		return nil
	})
	return info, err
}
