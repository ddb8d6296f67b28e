package graph

import (
	"container/heap"
	"context"
	"fmt"
	"runtime/debug"
)

// Status is how a node's walk ended.
type Status string

const (
	// Succeeded: fn returned nil.
	Succeeded Status = "Succeeded"
	// Failed: fn returned an error (or panicked) while ctx was live.
	Failed Status = "Failed"
	// Skipped: fn was not called because a prerequisite failed or was skipped.
	Skipped Status = "Skipped"
	// Canceled: ctx ended before fn was called, or fn returned an error after
	// ctx ended (it was interrupted).
	Canceled Status = "Canceled"
)

// Result is the outcome of one node.
type Result struct {
	Status Status
	// Err is what fn returned, for Failed and for an interrupted Canceled.
	Err error
	// Cause, for Skipped, is the id of the node whose failure stopped this
	// one: the failed node itself, also for nodes further down its subtree.
	Cause string
}

// DefaultParallelism is used when WalkOptions.Parallelism is not positive.
const DefaultParallelism = 10

// WalkOptions tunes Walk.
type WalkOptions struct {
	// Parallelism bounds the fn calls running at once; <= 0 means
	// DefaultParallelism.
	Parallelism int
	// Reverse walks dependents first, as deletion needs: a node runs only
	// after every node depending on it succeeded. Among ready nodes the one
	// last in Order() starts first, so that one at a time a reverse walk
	// goes in the reverse of Order(), as a forward walk goes in Order().
	Reverse bool
	// Unbounded, if set, names the nodes that start as soon as they are
	// ready, outside Parallelism: calls that only wait for a batch others
	// run (a Terraform plan of many resources) cost nothing while waiting,
	// and the batch is the larger for each of them.
	Unbounded func(id string) bool
	// Stop, when closed, starts no further fn call: nodes not started are
	// Canceled with StopErr, while running calls go on with their live ctx
	// and Walk waits for them, so what is in flight finishes (a cancelled
	// apply). Nil never stops.
	Stop    <-chan struct{}
	StopErr error
}

type done struct {
	node int
	err  error
}

// Walk calls fn for every node, at most opts.Parallelism at once, a node only
// after all its prerequisites (dependencies, or dependents when Reverse)
// succeeded. When a node fails, the nodes that need it are Skipped with the
// failed id as Cause, while independent branches go on.
//
// When ctx ends, no further fn call starts and every node not started is
// Canceled. Running calls get the ended ctx and Walk waits for them to return
// — so the caller can record what they did — but never longer than they take:
// an fn that honours ctx lets Walk return at once.
//
// Every node appears in the returned map. fn runs on its own goroutine; a
// panic in fn fails that node rather than the process.
func (g *Graph) Walk(ctx context.Context, opts WalkOptions, fn func(ctx context.Context, id string) error) map[string]Result {
	parallelism := opts.Parallelism
	if parallelism <= 0 {
		parallelism = DefaultParallelism
	}
	prereqs, unlocks := g.deps, g.dependents
	if opts.Reverse {
		prereqs, unlocks = g.dependents, g.deps
	}

	results := make(map[string]Result, len(g.ids))
	free := make([]bool, len(g.ids))
	if opts.Unbounded != nil {
		for i, id := range g.ids {
			free[i] = opts.Unbounded(id)
		}
	}
	// Ready nodes wait in two queues, so that a full set of bounded slots
	// costs nothing to check: the free ones start at once, the bounded ones
	// as slots open. They hold ranks (walkRanks): of the ready nodes, the
	// lowest rank starts first.
	rank, byRank := g.walkRanks(opts.Reverse)
	readyFree, readyBounded := &intHeap{}, &intHeap{}
	markReady := func(n int) {
		if free[n] {
			heap.Push(readyFree, rank[n])
		} else {
			heap.Push(readyBounded, rank[n])
		}
	}
	pending := make([]int, len(g.ids))
	for i := range g.ids {
		pending[i] = len(prereqs[i])
		if pending[i] == 0 {
			markReady(i)
		}
	}
	started := make([]bool, len(g.ids))

	// Buffered for every node so that a finishing fn never blocks, whatever
	// the loop below is doing.
	finished := make(chan done, len(g.ids))
	running := 0  // bounded calls running
	inFlight := 0 // all calls running

	// skip marks everything that needs n, transitively, as Skipped because of
	// cause. Nodes already decided keep their result.
	var skip func(n int, cause string)
	skip = func(n int, cause string) {
		for _, d := range unlocks[n] {
			if _, decided := results[g.ids[d]]; decided || started[d] {
				continue
			}
			results[g.ids[d]] = Result{Status: Skipped, Cause: cause}
			skip(d, cause)
		}
	}

	canceled := false
	for {
		if !canceled && (ctx.Err() != nil || stopped(opts.Stop)) {
			canceled = true
			cause := context.Cause(ctx)
			if cause == nil {
				cause = opts.StopErr
			}
			for i, id := range g.ids {
				if _, decided := results[id]; !decided && !started[i] {
					results[id] = Result{Status: Canceled, Err: cause}
				}
			}
		}
		for !canceled && (readyFree.Len() > 0 || (readyBounded.Len() > 0 && running < parallelism)) {
			q := readyFree
			if q.Len() == 0 {
				q = readyBounded
			}
			n := byRank[heap.Pop(q).(int)]
			if _, decided := results[g.ids[n]]; decided {
				continue // skipped while it waited
			}
			started[n] = true
			inFlight++
			if !free[n] {
				running++
			}
			go func() {
				finished <- done{node: n, err: call(ctx, fn, g.ids[n])}
			}()
		}
		if inFlight == 0 && (canceled || readyFree.Len()+readyBounded.Len() == 0) {
			break
		}
		var d done
		if canceled {
			d = <-finished
		} else {
			select {
			case d = <-finished:
			case <-ctx.Done():
				continue
			case <-opts.Stop:
				continue
			}
		}
		inFlight--
		if !free[d.node] {
			running--
		}
		id := g.ids[d.node]
		switch {
		case d.err == nil:
			results[id] = Result{Status: Succeeded}
			for _, u := range unlocks[d.node] {
				pending[u]--
				if pending[u] == 0 {
					markReady(u)
				}
			}
		case ctx.Err() != nil:
			results[id] = Result{Status: Canceled, Err: d.err}
		default:
			results[id] = Result{Status: Failed, Err: d.err}
			skip(d.node, id)
		}
	}
	// A graph from New has no cycle, so every node is decided by now; this
	// guards the promise that every node appears, should that ever change.
	for _, id := range g.ids {
		if _, decided := results[id]; !decided {
			results[id] = Result{Status: Skipped, Cause: "unreachable"}
		}
	}
	return results
}

// stopped reports whether stop is closed.
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// walkRanks orders the nodes for a walk: forward by spec position (the
// tie-break of Order(), so Order() is a walk one node at a time), reverse in
// the reverse of Order(). rank maps a node to its place, byRank back.
func (g *Graph) walkRanks(reverse bool) (rank, byRank []int) {
	rank, byRank = make([]int, len(g.ids)), make([]int, len(g.ids))
	for k := range g.ids {
		n := k
		if reverse {
			n = g.order[len(g.order)-1-k]
		}
		rank[n], byRank[k] = k, n
	}
	return rank, byRank
}

// call runs fn, turning a panic into an error so one bad resource cannot take
// down a whole apply and lose the record of the others.
func call(ctx context.Context, fn func(ctx context.Context, id string) error, id string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("walking %s: panic: %v\n%s", id, r, debug.Stack())
		}
	}()
	return fn(ctx, id)
}
