package sandbox_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/sandboxtest"
	"github.com/wardenhq/warden/sandbox"
)

// A long-lived command talked to while it runs: Start returns once it runs, the pipes carry a
// conversation, the limits are lifted, and Kill ends it and everything it started.
func TestStartTalkAndKill(t *testing.T) {
	sandboxtest.Need(t)
	marker := fmt.Sprint(800000 + os.Getpid()%99999)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inW.Close()
	outR, outW := io.Pipe()
	p, err := sandbox.Start(context.Background(), sandbox.Spec{
		Workspace: t.TempDir(), Stdin: inR, Stdout: outW,
		Shell:    "setsid sleep " + marker + "1 & while read line; do echo \"got $line\"; done",
		Timeout:  100 * time.Millisecond, // lifted by NoLimits
		NoLimits: true,
	})
	inR.Close()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		p.Wait()
		outW.Close()
	}()
	lines := bufio.NewReader(outR)
	for i := range 3 {
		time.Sleep(100 * time.Millisecond) // past the time limit NoLimits lifted
		fmt.Fprintf(inW, "line %d\n", i)
		got, err := lines.ReadString('\n')
		if want := fmt.Sprintf("got line %d\n", i); got != want || err != nil {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
	select {
	case <-p.Done():
		t.Fatal("the command ended by itself")
	default:
	}
	if l := leftovers(t, marker+"1"); !slices.ContainsFunc(l, func(s string) bool { return strings.Contains(s, ": sleep ") }) {
		t.Errorf("the command's child is not running: %q", l)
	}
	p.Kill()
	res, err := p.Wait()
	if err != nil || !res.Canceled || res.TimedOut || !res.Sandboxed {
		t.Errorf("after Kill: %+v, %v; want cancelled", res, err)
	}
	if l := leftovers(t, marker); len(l) > 0 {
		t.Errorf("processes left behind: %q", l)
	}
	// Wait again says the same.
	if again, err2 := p.Wait(); !reflect.DeepEqual(again, res) || err2 != err {
		t.Errorf("Wait again: %+v, %v", again, err2)
	}
}

// A command that ends by itself: Wait has its status; closing its standard input ends a
// command that reads it.
func TestStartEndsOnEOF(t *testing.T) {
	sandboxtest.Need(t)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	p, err := sandbox.Start(context.Background(), sandbox.Spec{
		Workspace: t.TempDir(), Stdin: inR, Stdout: &out, Shell: "cat; exit 4", NoLimits: true,
	})
	inR.Close()
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(inW, "bye\n")
	inW.Close()
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the command did not end when its input closed")
	}
	res, err := p.Wait()
	if err != nil || res.ExitCode != 4 || res.Canceled || out.String() != "bye\n" {
		t.Errorf("result %+v, %v, output %q; want status 4 and the input echoed", res, err, out.String())
	}
}

// A command that cannot start is Start's error, as Run's; the end of the context before it
// starts leaves nothing behind.
func TestStartErrors(t *testing.T) {
	sandboxtest.Need(t)
	_, err := sandbox.Start(context.Background(), sandbox.Spec{Workspace: t.TempDir(), Command: []string{"no-such-program-here"}})
	if err == nil || errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "no-such-program-here") {
		t.Errorf("a missing program: %v, want a plain error naming it", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p, err := sandbox.Start(ctx, sandbox.Spec{Workspace: t.TempDir(), Command: []string{"sleep", "1000"}, NoLimits: true})
	if err == nil {
		res, _ := p.Wait()
		if !res.Canceled {
			t.Errorf("started with an ended context: %+v", res)
		}
	}
}

func TestStartUnconfined(t *testing.T) {
	marker := fmt.Sprint(700000 + os.Getpid()%99999)
	p, err := sandbox.Start(context.Background(), sandbox.Spec{
		Workspace: t.TempDir(), Unconfined: true, NoLimits: true, Timeout: time.Millisecond,
		Shell: "sleep " + marker + " & wait",
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	select {
	case <-p.Done():
		t.Fatal("an unconfined command with no limits ended at the time limit")
	default:
	}
	p.Kill()
	res, err := p.Wait()
	if err != nil || !res.Canceled || res.Sandboxed {
		t.Errorf("after Kill: %+v, %v", res, err)
	}
	if l := leftovers(t, marker); len(l) > 0 {
		t.Errorf("processes left behind: %q", l)
	}
}
