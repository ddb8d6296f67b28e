package webhook

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestBodyTime(t *testing.T) {
	for _, tc := range []struct {
		announced int64
		want      time.Duration
	}{
		{0, 3 * time.Second},
		{30_000, 3*time.Second + 30_000*time.Second/(128<<10)},
		{512 << 10, 7 * time.Second},
		{1 << 20, 10 * time.Second},
		{MaxBody, 10 * time.Second},
		{1 << 62, 10 * time.Second},
		{-1, 10 * time.Second},
	} {
		if got := githubPace.bodyTime(tc.announced); got != tc.want {
			t.Errorf("a body of %d bytes may take %s, want %s", tc.announced, got, tc.want)
		}
	}
}

// TestBodyDeadline: over real connections, a body that does not arrive
// within its time is cut off with 408 and its share of the budget freed;
// one sent at once is read whole, even when it waited for room longer than
// its own time.
func TestBodyDeadline(t *testing.T) {
	// GitHub's pace, scaled down.
	fast := pace{grace: 200 * time.Millisecond, rate: 64 << 10, most: time.Second}
	signed := func(body string) string { return sign(testSecret, body) }
	for _, tc := range []struct {
		name      string
		announced int64  // -1: chunked
		send      string // sent at once; then the connection is held open
		signature string
		hold      bool // the budget is full when the request comes, for longer than the body's time
		want      int
	}{
		{name: "1 MiB announced, nothing sent", announced: 1 << 20, signature: signed(""), want: http.StatusRequestTimeout},
		{name: "32 KiB announced, half sent", announced: 32 << 10, send: strings.Repeat(" ", 16<<10), signature: signed(""), want: http.StatusRequestTimeout},
		{name: "chunked, some sent", announced: -1, send: "4000\r\n" + strings.Repeat(" ", 1<<10), signature: signed(""), want: http.StatusRequestTimeout},
		{name: "sent at once, wrongly signed", announced: 2, send: "{}", signature: sign("not the secret", "{}"), want: http.StatusUnauthorized},
		{name: "sent at once, signed", announced: 2, send: "{}", signature: signed("{}"), want: http.StatusOK},
		{name: "sent at once, waiting for room", announced: 2, send: "{}", signature: signed("{}"), hold: true, want: http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBudget(1<<20, 10*time.Second)
			b.pace = fast
			answered := make(chan int, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, err := Receive(w, r, []byte(testSecret), b)
				st := http.StatusOK
				if err != nil {
					st = status(err)
				}
				answered <- st
				w.WriteHeader(st)
			}))
			defer srv.Close()
			if tc.hold {
				full := b.share(0)
				if _, ok := full.grow(context.Background(), 1<<20); !ok {
					t.Fatal("an empty budget had no room")
				}
				// Given back after twice the body's time: the body
				// waited, it did not dawdle.
				time.AfterFunc(2*fast.bodyTime(tc.announced), full.release)
			}

			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			length := fmt.Sprintf("Content-Length: %d\r\n", tc.announced)
			if tc.announced < 0 {
				length = "Transfer-Encoding: chunked\r\n"
			}
			fmt.Fprintf(conn, "POST /webhook HTTP/1.1\r\nHost: bot\r\nContent-Type: application/json\r\n"+
				"X-GitHub-Event: ping\r\nX-GitHub-Delivery: 72d3162e-cc78-11e3-81ab-4c9367dc0958\r\n"+
				"X-Hub-Signature-256: %s\r\n%s\r\n%s", tc.signature, length, tc.send)

			// The test's own bound, far past any body's time.
			conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			resp.Body.Close()
			if got := <-answered; got != tc.want || resp.StatusCode != tc.want {
				t.Errorf("answered %d (%s), want %d", got, resp.Status, tc.want)
			}
			if tc.want == http.StatusRequestTimeout {
				// Cut off: the server closes the connection.
				if _, err := conn.Read(make([]byte, 1)); err != io.EOF {
					t.Errorf("the connection is still open after a 408: %v", err)
				}
			}
			if b.InUse() != 0 {
				t.Errorf("%d bytes of the budget still held after the answer", b.InUse())
			}
		})
	}
}
