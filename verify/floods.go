package verify

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/meshc-dev/meshc/compiler"
	"github.com/meshc-dev/meshc/principal"
)

// floods floods, as the first principal of each kind (a machine, a module, an enrolling machine,
// a person), what the catalogue's limits bound, and requires each flood to meet the limit the
// catalogue derives: a message past its account's max_payload closes the connection; a stream
// refuses a message past its largest; a connection holds its account's max_subscriptions and
// not one more; an account holds its connections and not one more; a pull may not wait past its
// consumer's max_expires. A limit missing from the golden files, or set wider there, is a
// failure naming it.
func (p *proof) floods() {
	seen := map[compiler.UserKind]bool{}
	for _, u := range p.connected() {
		if u.Kind == compiler.KindController || seen[u.Kind] {
			continue
		}
		seen[u.Kind] = true
		limits := p.limitsOf(u)
		if !p.live {
			p.payloadFlood(u, limits)
			p.subscriptionFlood(u, limits)
			p.connectionFlood(u, limits)
		}
		p.messageSizeFlood(u)
		p.expiryFlood(u)
	}
	if p.live {
		p.said(Flood, "%d floods cut off by their limits: a stream's largest message, a pull past its expiry", p.tried[Flood.ID].Tries-p.tried[Flood.ID].Failed)
		return
	}
	p.said(Flood, "%d floods cut off by their limits, by one principal of each kind: max_payload, a stream's largest message, max_subscriptions, connections, a pull past its expiry", p.tried[Flood.ID].Tries-p.tried[Flood.ID].Failed)
}

// limitsOf are the limits of a principal's account, as the catalogue derives them.
func (p *proof) limitsOf(u compiler.User) compiler.AccountLimits {
	for _, a := range p.expected.Accounts {
		if a.Name == u.Account {
			return a.Limits
		}
	}
	return p.expected.MeshAccount().Limits
}

// payloadFlood publishes one byte past the account's max_payload over the wire protocol itself,
// as a hostile client would (nats.go refuses a message past the limit the server tells it), and
// requires the server to refuse it and close the connection.
func (p *proof) payloadFlood(u compiler.User, limits compiler.AccountLimits) {
	if limits.Payload <= 0 {
		return
	}
	p.try(Flood, 1)
	if err := p.publishRaw(u.Name, compiler.InboxPrefix(u.Name)+".flood", int(limits.Payload)+1); err != nil {
		p.fail(Flood, u.Name, "max_payload", "", "%s published %d bytes, one past its account's max_payload of %d, and %v: the golden files must say max_payload; run `meshc emit`",
			u.Name, limits.Payload+1, limits.Payload, err)
	}
}

// publishRaw connects as user over the wire protocol with its credentials, publishes size bytes
// on subject, and returns nil when the server refuses it for its size and closes the connection.
func (p *proof) publishRaw(user, subject string, size int) error {
	o := nats.GetDefaultOptions()
	for _, opt := range p.as[user] {
		if err := opt(&o); err != nil {
			return err
		}
	}
	addr, err := url.Parse(p.url)
	if err != nil {
		return err
	}
	conn, err := net.DialTimeout("tcp", addr.Host, 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "INFO ") {
		return fmt.Errorf("no INFO from the server: %q %v", line, err)
	}
	var info struct {
		Nonce string `json:"nonce"`
	}
	json.Unmarshal([]byte(strings.TrimPrefix(line, "INFO ")), &info)
	connect := map[string]any{"verbose": false, "pedantic": false, "protocol": 1, "headers": true, "user": o.User, "pass": o.Password}
	if o.Nkey != "" || o.UserJWT != nil {
		if o.SignatureCB == nil {
			return errors.New("credentials that sign nothing")
		}
		sig, err := o.SignatureCB([]byte(info.Nonce))
		if err != nil {
			return err
		}
		connect["sig"] = base64.RawURLEncoding.EncodeToString(sig)
		connect["nkey"] = o.Nkey
		if o.UserJWT != nil {
			if connect["jwt"], err = o.UserJWT(); err != nil {
				return err
			}
		}
	}
	data, _ := json.Marshal(connect)
	fmt.Fprintf(conn, "CONNECT %s\r\nPING\r\n", data)
	if line, err := r.ReadString('\n'); err != nil || line != "PONG\r\n" {
		return fmt.Errorf("the server did not let %s in: %q %v", user, line, err)
	}
	fmt.Fprintf(conn, "PUB %s %d\r\n%s\r\nPING\r\n", subject, size, bytes.Repeat([]byte("p"), size))
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("the connection ended without the server's refusal (%v)", err)
		}
		if strings.Contains(line, "Maximum Payload Violation") {
			break
		}
		if line == "PONG\r\n" {
			return errors.New("the server took it")
		}
	}
	if _, err := r.ReadString('\n'); err == nil {
		return errors.New("the connection stayed open after the server refused it")
	}
	return nil
}

// subscriptionFlood subscribes, on a connection of its own, the account's max_subscriptions, all
// of which the server takes, then one more, which it refuses.
func (p *proof) subscriptionFlood(u compiler.User, limits compiler.AccountLimits) {
	if limits.Subscriptions <= 0 {
		return
	}
	p.try(Flood, 1)
	c, err := p.dial(u.Name, p.as[u.Name])
	if err != nil {
		p.fail(Flood, u.Name, "", "", "%v", err)
		return
	}
	defer c.Close()
	subscribe := p.floodSubscription(u)
	for i := range limits.Subscriptions {
		if _, err := subscribe(c, strconv.FormatInt(i, 10)); err != nil {
			p.fail(Flood, u.Name, "max_subscriptions", "", "%v", err)
			return
		}
	}
	if err := c.NC.Flush(); err != nil || c.Meets(nats.ErrMaxSubscriptionsExceeded, 50*time.Millisecond) == nil {
		p.fail(Flood, u.Name, "max_subscriptions", "", "%s's connection was refused a subscription before its account's max_subscriptions of %d: the golden files set it lower than the catalogue", u.Name, limits.Subscriptions)
		return
	}
	subscribe(c, "last")
	if err := c.Meets(nats.ErrMaxSubscriptionsExceeded, principal.Wait); err != nil {
		p.fail(Flood, u.Name, "max_subscriptions", "", "%s's connection held %d subscriptions, one past its account's max_subscriptions, and %v: the golden files must say max_subscriptions; run `meshc emit`",
			u.Name, limits.Subscriptions+1, err)
	}
}

// floodSubscription is how a flood subscribes as u, each subscription named by its token: a
// subject of its own inbox, or for a serving user, which has none, its first tool in its queue
// group, again and again (a subscription its grants refuse is no subscription the limit counts).
// The floods run last, so no call reaches a flood's member of a queue group.
func (p *proof) floodSubscription(u compiler.User) func(c *principal.Conn, token string) (*nats.Subscription, error) {
	if u.HasInbox() || len(u.Subscribe.Allow) == 0 {
		return func(c *principal.Conn, token string) (*nats.Subscription, error) {
			return c.NC.Subscribe(compiler.InboxPrefix(u.Name)+".flood."+token, func(*nats.Msg) {})
		}
	}
	subject, queue := compiler.SplitQueue(u.Subscribe.Allow[0])
	return func(c *principal.Conn, _ string) (*nats.Subscription, error) {
		return c.NC.QueueSubscribe(subject, queue, func(*nats.Msg) {})
	}
}

// connectionFlood opens connections as u until its account holds its limit, counting those the
// proof already holds there, and requires the next to be refused.
func (p *proof) connectionFlood(u compiler.User, limits compiler.AccountLimits) {
	if limits.Connections <= 0 {
		return
	}
	limit := int(limits.Connections)
	if p.expected.Operator != nil {
		// An account's JWT takes one connection more than its users': room for apply's probe
		// (compiler.Plan.Claims).
		limit++
	}
	p.try(Flood, 1)
	held := 0
	for name := range p.conns {
		if p.accountOf(name) == p.accountOf(u.Name) {
			held++
		}
	}
	for _, c := range p.served.conns {
		if p.accountOf(c.User) == p.accountOf(u.Name) {
			held++
		}
	}
	// A connection closed a moment ago (the floods before) reaches the server a moment later.
	if a := p.serverAccount(u.Account); a != nil {
		deadline := time.Now().Add(5 * time.Second)
		for a.NumLocalConnections() > held && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	var opened []*principal.Conn
	defer func() {
		for _, c := range opened {
			c.Close()
		}
	}()
	for held <= limit {
		c, err := p.dial(u.Name, p.as[u.Name])
		if errors.Is(err, nats.ErrMaxAccountConnectionsExceeded) {
			if held < limit {
				p.fail(Flood, u.Name, "max_connections", "", "%s's account refused a connection at %d, below the %d the catalogue derives: the golden files set it lower", u.Name, held+1, limit)
			}
			return
		}
		if err != nil {
			p.fail(Flood, u.Name, "max_connections", "", "%v", err)
			return
		}
		opened = append(opened, c)
		held++
	}
	p.fail(Flood, u.Name, "max_connections", "", "%s's account took %d connections, one past the %d the catalogue derives: the golden files must say max_connections; run `meshc emit`", u.Name, held, limit)
}

// messageSizeFlood publishes, inert, one byte past the largest message a stream takes on a
// subject u may store, and requires the stream's refusal for its size.
func (p *proof) messageSizeFlood(u compiler.User) {
	for _, s := range u.Publish.Allow {
		if strings.ContainsAny(s, "*>") {
			continue
		}
		stream := p.streamOf(s)
		var max int32
		for _, x := range p.expected.Streams {
			if x.Config.Name == stream {
				max = x.Config.MaxMsgSize
			}
		}
		if stream == "" || max <= 0 {
			continue
		}
		p.try(Flood, 1)
		m, err := p.conns[u.Name].NC.RequestMsg(&nats.Msg{Subject: s, Header: principal.Inert(), Data: bytes.Repeat([]byte("s"), int(max)+1)}, principal.Wait)
		var ack struct {
			Error *jetstream.APIError `json:"error"`
		}
		if err == nil {
			json.Unmarshal(m.Data, &ack)
		}
		if err != nil || ack.Error == nil || ack.Error.ErrorCode != jetstream.JSErrCodeStreamMessageExceedsMaximum {
			got := fmt.Sprint(err)
			if err == nil {
				got = fmt.Sprint(ack.Error)
			}
			p.failInPlan(Flood, u.Name, s, stream, "%s published %d bytes on %s, one past %s's largest message of %d, and the stream answered %s, not its refusal for the size: golden/plan.json must say max_msg_size; run `meshc emit`",
				u.Name, max+1, s, stream, max, got)
		}
		return
	}
}

// expiryFlood sends a pull asking to wait a minute past its consumer's max_expires, and requires
// the server's refusal (409), which delivers nothing.
func (p *proof) expiryFlood(u compiler.User) {
	for _, cons := range p.expected.Consumers {
		name := compiler.ConsumerName(cons.Config)
		if cons.Config.DeliverSubject != "" || cons.Config.MaxRequestExpires <= 0 || !containsString(u.Publish.Allow, compiler.PullNext(cons.Stream, name)) {
			continue
		}
		p.try(Flood, 1)
		c := p.conns[u.Name]
		body := fmt.Sprintf(`{"batch":1,"expires":%d}`, cons.Config.MaxRequestExpires+time.Minute)
		m, err := c.NC.Request(compiler.PullNext(cons.Stream, name), []byte(body), principal.Wait)
		if err != nil || m.Header.Get("Status") != "409" || !strings.HasPrefix(m.Header.Get("Description"), "Exceeded MaxRequestExpires") {
			got := fmt.Sprint(err)
			if err == nil {
				got = fmt.Sprintf("%s %q", m.Header.Get("Status"), m.Header.Get("Description"))
				if m.Header.Get("Status") == "" {
					m.Ack()
				}
			}
			p.failInPlan(Flood, u.Name, compiler.PullNext(cons.Stream, name), cons.Stream+"/"+name, "%s pulled %s/%s asking to wait %s, past the %s the catalogue derives, and was answered %s, not refused: golden/plan.json must say max_expires; run `meshc emit`",
				u.Name, cons.Stream, name, cons.Config.MaxRequestExpires+time.Minute, cons.Config.MaxRequestExpires, got)
		}
		return
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
