package vet

import (
	"fmt"
	"testing"
)

func TestVet(t *testing.T) { fmt.Printf("%d\n", "not a number") }
