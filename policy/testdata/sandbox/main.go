// Command sandbox is a program that serves the policy sandbox and does
// nothing else: the policy package's tests evaluate in it, built without
// the race detector, whose shadow memory no bounded data segment holds.
package main

import (
	"fmt"
	"os"

	"github.com/kusionpr/kusionpr/policy"
)

func main() {
	policy.ServeIfSandbox()
	fmt.Fprintln(os.Stderr, "sandbox: started without", policy.SandboxArg)
	os.Exit(2)
}
