// Command modules is the two modules of docs/modules.md ("Writing a module") written with nats.go,
// run against their catalogue (../catalogue) on a bus meshc made:
//
//	MESH_MACHINE=box NATS_URL=… NATS_PASSWORD=… NATS_SERVE_PASSWORD=… modules indexer
//	MESH_MACHINE=box NATS_URL=… NATS_PASSWORD=… modules uploader cat.jpg dog.jpg
//
// The indexer consumes the photos announced, serves the search and renders thumbnails until it is
// stopped; the uploader announces each photo, submits its thumbnail, and searches the index until
// it holds them all.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case len(os.Args) == 2 && os.Args[1] == "indexer":
		err = indexer(ctx)
	case len(os.Args) > 2 && os.Args[1] == "uploader":
		err = uploader(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("usage: modules indexer | modules uploader PHOTO...")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// indexer consumes uploader's photo.added, serves search, and holds the seat thumbnails.
func indexer(ctx context.Context) error {
	nc, err := connect("indexer")
	if err != nil {
		return err
	}
	defer nc.Drain()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	serving, err := connectServing("indexer")
	if err != nil {
		return err
	}
	defer serving.Drain()
	var mu sync.Mutex
	var photos []string
	if _, err := serveTool(serving, "indexer", "search", func(query []byte) []byte {
		mu.Lock()
		defer mu.Unlock()
		var found []string
		for _, p := range photos {
			if strings.Contains(p, string(query)) {
				found = append(found, p)
			}
		}
		return []byte(strings.Join(found, " "))
	}); err != nil {
		return err
	}
	events, err := consumeEvents(ctx, js, "indexer", func(m jetstream.Msg) error {
		mu.Lock()
		defer mu.Unlock()
		photos = append(photos, string(m.Data()))
		fmt.Println("indexed", string(m.Data()))
		return nil
	})
	if err != nil {
		return err
	}
	defer events.Stop()
	work, err := takeWork(ctx, js, "thumbnails", func(m jetstream.Msg) error {
		fmt.Println("rendered", string(m.Data()))
		return nil
	})
	if err != nil {
		return err
	}
	defer work.Stop()
	fmt.Println("indexer: ready")
	<-ctx.Done()
	return nil
}

// uploader announces each photo, submits its thumbnail to the seat, and asks the indexer's search
// until the index holds them all (it catches up as the indexer consumes the events).
func uploader(ctx context.Context, names []string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	nc, err := connect("uploader")
	if err != nil {
		return err
	}
	defer nc.Drain()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := publishEvent(ctx, js, "uploader", "photo.added", []byte(name)); err != nil {
			return fmt.Errorf("announcing %s: %w", name, err)
		}
		if err := submitWork(ctx, js, "thumbnails", "render", []byte(name)); err != nil {
			return fmt.Errorf("submitting %s's thumbnail: %w", name, err)
		}
		fmt.Println("uploaded", name)
	}
	for {
		found, err := callTool(ctx, nc, "indexer", "search", []byte(""))
		if err == nil && len(strings.Fields(string(found))) >= len(names) {
			fmt.Println("search:", string(found))
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the index never held every photo (last answer %q, %v)", found, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
