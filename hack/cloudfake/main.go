// Command cloudfake serves internal/cloudfake over HTTPS for the test
// environment: the clouds' token services and the test cluster's webhook
// token authenticator. It makes its own CA and writes it to -dir/ca.pem,
// which the API server's webhook configuration and the tests trust.
//
//	cloudfake -addr 127.0.0.1:PORT -dir DIR
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/kusionpr/kusionpr/internal/cloudfake"
	"github.com/kusionpr/kusionpr/internal/testca"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	dir := flag.String("dir", "", "folder for ca.pem")
	flag.Parse()
	if err := run(ctx, log, *addr, *dir); err != nil {
		log.Error("cloudfake failed", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger, addr, dir string) error {
	if dir == "" {
		return errors.New("-dir is required")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// The environment lives for days between restarts.
	caPEM, cert, err := testca.New("kusionpr test clouds CA", 90*24*time.Hour)
	if err != nil {
		return fmt.Errorf("making the certificate: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), caPEM, 0o644); err != nil {
		return err
	}
	fake, err := cloudfake.New("https://" + ln.Addr().String())
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: fake.Handler(), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("serving", "url", fake.URL)
	if err := srv.ServeTLS(ln, "", ""); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
