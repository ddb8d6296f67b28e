//go:build linux

package sandbox

import (
	"context"
	"os/exec"
	"testing"
)

// BenchmarkStart is the cost of confinement at start: the same program
// run plainly and confined (Check's namespace probe, this binary's start
// and the confining step included).
func BenchmarkStart(b *testing.B) {
	py := findPython(b)
	ctx := context.Background()
	for _, target := range []struct {
		name string
		argv []string
		read []string
	}{
		{"true", []string{"/usr/bin/true"}, []string{"/usr/bin/true", "/lib", "/lib64", "/usr/lib"}},
		{"python", []string{py.exe, "-c", "pass"}, py.read},
	} {
		b.Run(target.name+"/plain", func(b *testing.B) {
			for b.Loop() {
				if err := exec.CommandContext(ctx, target.argv[0], target.argv[1:]...).Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(target.name+"/confined", func(b *testing.B) {
			for b.Loop() {
				cmd, err := Command(ctx, Policy{Read: target.read}, target.argv[0], target.argv[1:]...)
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			if _, err := Check(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
