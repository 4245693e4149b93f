package main

// With -workers N (N > 1) the oracle answers through N child processes of itself, so N kubelet
// calls run at once on N cores while the answers keep the order of the requests. A child that
// hits a kubelet call which does not return answers that request with kind "hang" and exits
// with status 3 (its spinning goroutine cannot be stopped); the supervisor then starts a new
// child and sends it again the requests the old one had not answered, so in this mode the
// oracle itself never exits on a hang: every request line gets exactly one answer line.
//
// Requests go to the child with the fewest unanswered requests. A child that exits with any
// other status, or cannot be started, is fatal: the supervisor prints why and exits with 2.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
)

var workers = 0 // set from the -workers flag in main

// worker is one child oracle process and the requests it has not answered yet, in the order
// they were written to it (the child answers in that order).
type worker struct {
	args    []string
	queue   chan []byte // requests to write, closed at the end of the input
	answers chan []byte // answer lines, in request order
	died    chan error  // the child's stdout ended: its exit status (nil for 0)

	mu      sync.Mutex
	pending [][]byte // written, not yet answered; guarded by mu
	stdin   io.WriteCloser
}

func (w *worker) numPending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending)
}

// start runs a new child and a goroutine that forwards its answers, then writes it every
// pending request again (none on the first start).
func (w *worker) start() error {
	cmd := exec.Command(w.args[0], w.args[1:]...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				w.mu.Lock()
				w.pending = w.pending[1:]
				w.mu.Unlock()
				w.answers <- line
			}
			if err != nil {
				break
			}
		}
		w.died <- cmd.Wait()
	}()
	w.mu.Lock()
	w.stdin = stdin
	resend := append([][]byte(nil), w.pending...)
	w.mu.Unlock()
	for _, line := range resend {
		_, _ = stdin.Write(line) // a child that dies here is seen by its reader
	}
	return nil
}

// run writes the queued requests to the child, restarting it after each hang, until the
// input has ended and the last child has exited after answering everything.
func (w *worker) run() error {
	if err := w.start(); err != nil {
		return err
	}
	queue := w.queue
	for {
		select {
		case line, ok := <-queue:
			if !ok {
				queue = nil
				w.mu.Lock()
				_ = w.stdin.Close()
				w.mu.Unlock()
				continue
			}
			w.mu.Lock()
			w.pending = append(w.pending, line)
			stdin := w.stdin
			w.mu.Unlock()
			_, _ = stdin.Write(line) // as above: a dying child is handled on its exit
		case err := <-w.died:
			var exit *exec.ExitError
			hang := errors.As(err, &exit) && exit.ExitCode() == 3
			if err != nil && !hang {
				return fmt.Errorf("child exited: %v", err)
			}
			if !hang {
				if queue != nil || w.numPending() > 0 {
					return errors.New("child exited before answering every request")
				}
				return nil
			}
			if err := w.start(); err != nil {
				return err
			}
			if queue == nil {
				w.mu.Lock()
				_ = w.stdin.Close()
				w.mu.Unlock()
			}
		}
	}
}

// supervise answers stdin on stdout through n children (see the top of this file) and returns
// the process's exit status.
func supervise(n int, childArgs []string) int {
	ws := make([]*worker, n)
	errs := make(chan error, n)
	for i := range ws {
		ws[i] = &worker{args: childArgs, queue: make(chan []byte, 1<<16),
			answers: make(chan []byte, 1<<16), died: make(chan error, 1)}
		go func(w *worker) { errs <- w.run() }(ws[i])
	}
	order := make(chan int, 1<<16) // which worker answers each request, in input order
	go func() {
		in := bufio.NewReaderSize(os.Stdin, 1<<20)
		for {
			line, err := in.ReadBytes('\n')
			if strings.TrimSpace(string(line)) != "" {
				if line[len(line)-1] != '\n' {
					line = append(line, '\n')
				}
				best := 0
				for i := 1; i < n; i++ {
					if len(ws[i].queue)+ws[i].numPending() < len(ws[best].queue)+ws[best].numPending() {
						best = i
					}
				}
				order <- best
				ws[best].queue <- line
			}
			if err != nil {
				break
			}
		}
		close(order)
		for _, w := range ws {
			close(w.queue)
		}
	}()
	done := make(chan struct{})
	go func() {
		out := bufio.NewWriter(os.Stdout)
		for i := range order {
			_, _ = out.Write(<-ws[i].answers)
			if len(order) == 0 {
				_ = out.Flush()
			}
		}
		_ = out.Flush()
		close(done)
	}()
	for range ws {
		if err := <-errs; err != nil {
			fmt.Fprintln(os.Stderr, "oracle: worker:", err)
			return 2
		}
	}
	<-done
	return 0
}
