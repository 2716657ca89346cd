//go:build linux

package sandbox

import (
	"io"
	"os"
	"time"
)

// runStdio is a run's standard input, output and error, made as os/exec makes them for a
// child it starts, for an init process that was started before the run (it gets them over its
// control socket): an *os.File standard input is passed as it is, nil is /dev/null, any other
// reader is copied into a pipe; stdout and stderr are pipes read into their writers, one pipe
// when both are the same writer.
type runStdio struct {
	child  [3]*os.File // the init process's 0, 1 and 2, and so the command's
	made   []*os.File  // those of child made here, closed once handed over
	parent []*os.File  // this process's ends of the pipes
	in     func()      // copies the input into its pipe, if it is one
	outs   []func()    // copy the output pipes into their writers
	inDone chan struct{}
	out    chan struct{} // closed when the output has been read to its end
}

func newStdio(in io.Reader, stdout, stderr io.Writer) (*runStdio, error) {
	s := &runStdio{inDone: make(chan struct{}), out: make(chan struct{})}
	if err := s.make(in, stdout, stderr); err != nil {
		s.closeChild()
		closeAll(s.parent)
		return nil, err
	}
	return s, nil
}

func (s *runStdio) make(in io.Reader, stdout, stderr io.Writer) error {
	switch f, ok := in.(*os.File); {
	case in == nil:
		f, err := os.Open(os.DevNull)
		if err != nil {
			return err
		}
		s.child[0] = f
		s.made = append(s.made, f)
	case ok:
		s.child[0] = f
	default:
		pr, pw, err := os.Pipe()
		if err != nil {
			return err
		}
		s.child[0] = pr
		s.made = append(s.made, pr)
		s.parent = append(s.parent, pw)
		s.in = func() {
			io.Copy(pw, in) // ends when the command stops reading, too (EPIPE)
			pw.Close()
		}
	}
	for i, w := range []io.Writer{stdout, stderr} {
		if i == 1 && sameWriter(stdout, stderr) {
			s.child[2] = s.child[1]
			break
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			return err
		}
		s.child[1+i] = pw
		s.made = append(s.made, pw)
		s.parent = append(s.parent, pr)
		s.outs = append(s.outs, func() {
			io.Copy(w, pr)
			pr.Close()
		})
	}
	return nil
}

// sameWriter reports whether a and b are the same writer, as os/exec decides whether a
// child's stdout and stderr are one pipe.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil { // writers of a type that cannot be compared
			same = false
		}
	}()
	return a == b
}

// closeChild closes the child's ends made here, once the init process holds them.
func (s *runStdio) closeChild() {
	closeAll(s.made)
	s.made = nil
}

// start starts copying.
func (s *runStdio) start() {
	go func() {
		if s.in != nil {
			s.in()
		}
		close(s.inDone)
	}()
	go func() {
		done := make(chan struct{}, len(s.outs))
		for _, c := range s.outs {
			go func() {
				c()
				done <- struct{}{}
			}()
		}
		for range s.outs {
			<-done
		}
		close(s.out)
	}()
}

// wait waits, once the init process has ended, for the output to be read to its end, as
// os/exec does: the command and everything it started are gone, so the pipes' write ends are
// closed, unless something passed them on. After outputGrace the pipes are closed, and the
// copying ends.
func (s *runStdio) wait() {
	t := time.NewTimer(outputGrace)
	defer t.Stop()
	select {
	case <-s.out:
		select {
		case <-s.inDone:
			return
		case <-t.C:
		}
	case <-t.C:
	}
	closeAll(s.parent)
	<-s.out
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
