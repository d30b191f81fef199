package wire

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/internal/natstest"
)

// hostileLists answers the JetStream list API on a real server in place of JetStream, with
// pages a broken or hostile server could send: page(offset) is the answer at that offset.
func hostileLists(t *testing.T, subject string, page func(offset int) any) *nats.Conn {
	t.Helper()
	s := natstest.Start(t, &server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	nc, _ := natstest.Connect(t, s.ClientURL())
	if _, err := nc.Subscribe(subject, func(m *nats.Msg) {
		var req pagedRequest
		_ = json.Unmarshal(m.Data, &req)
		data, _ := json.Marshal(page(req.Offset))
		m.Respond(data)
	}); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	return nc
}

// A list read from a server whose pages never get anywhere ends, said, long before the
// command's time-out: a page that brings nothing new (the same names again and again, while
// the total says there are more), and a total that grows with every page.
func TestAListThatDoesNotConvergeEnds(t *testing.T) {
	t.Parallel()
	streamInfo := func(name string) *jetstream.StreamInfo {
		return &jetstream.StreamInfo{Config: jetstream.StreamConfig{Name: name}}
	}
	for _, c := range []struct {
		name string
		page func(offset int) any
		want string
	}{
		{"the same page again", func(int) any {
			return streamListResponse{paged: paged{Total: 1000, Limit: 256}, Streams: []*jetstream.StreamInfo{streamInfo("A"), streamInfo("B")}}
		}, "does not advance"},
		{"a total that grows", func(offset int) any {
			return streamListResponse{paged: paged{Total: offset + 2, Offset: offset, Limit: 256}, Streams: []*jetstream.StreamInfo{streamInfo(fmt.Sprint("S", offset))}}
		}, "does not converge"},
	} {
		t.Run(c.name, func(t *testing.T) {
			nc := hostileLists(t, DefaultAPIPrefix+apiStreamList, c.page)
			// A safety net only: the read must end on its own, far sooner.
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			_, err := Read(ctx, nc, ReadOptions{RequestTimeout: 5 * time.Second})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("reading a list that %s: %v", c.name, err)
			}
		})
	}
}

// A cluster with a node down leaves a stream whose leader did not answer out of the page's items
// and names it under "missing", while the next page starts past it: read as nats-server 2.15
// pages (page 1 holds A and D with B and C missing; a page at offset 2 holds D again), the list
// ends complete, B and C marked unavailable. Advancing by the items alone asked for D again and
// gave up, as CI's cluster test once did with a node stopped.
func TestAListWithAMissingStreamAdvancesPastIt(t *testing.T) {
	t.Parallel()
	streamInfo := func(name string) *jetstream.StreamInfo {
		return &jetstream.StreamInfo{Config: jetstream.StreamConfig{Name: name}}
	}
	nc := hostileLists(t, DefaultAPIPrefix+apiStreamList, func(offset int) any {
		all := []string{"A", "B", "C", "D"}
		page := streamListResponse{paged: paged{Total: len(all), Offset: offset, Limit: 256}, Streams: []*jetstream.StreamInfo{}}
		for _, name := range all[min(offset, len(all)):] {
			if name == "B" || name == "C" {
				page.Missing = append(page.Missing, name)
				continue
			}
			page.Streams = append(page.Streams, streamInfo(name))
		}
		return page
	})
	// Every stream's consumer list is empty.
	if _, err := nc.Subscribe(DefaultAPIPrefix+apiConsumerList+"*", func(m *nats.Msg) {
		data, _ := json.Marshal(consumerListResponse{Consumers: []*jetstream.ConsumerInfo{}})
		m.Respond(data)
	}); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	st, err := Read(t.Context(), nc, ReadOptions{RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("reading a list with a stream missing: %v", err)
	}
	var got []string
	for _, s := range st.Streams {
		got = append(got, s.Name+":"+fmt.Sprint(s.Unavailable != ""))
	}
	if want := "A:false B:true C:true D:false"; strings.Join(got, " ") != want {
		t.Fatalf("streams read %v, want %s", got, want)
	}
}
