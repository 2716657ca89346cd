package shell

import (
	"strings"
)

// wrapper is a program that runs another program: its options are skipped to find the real
// one. apply returns the index in args where the wrapped command starts, or -1 when the
// wrapper runs no command (env alone, command -v x, su -c CODE: code is in strip.codes).
type wrapper struct {
	g       *grammar
	sub     []string // a subcommand before the options: uv run, bundle exec
	skip    int      // operands before the command: timeout's duration, chrt's priority
	assigns bool     // NAME=value operands before the command (env)
	chdir   []string // options whose value is the command's working directory
	writes  []string // options whose value is a file the wrapper writes (time -o)
	noRun   []string // options that mean no command is run (command -v, sudo -l)
	unknown []string // options that make the command's effects unknowable (sudo -R)
	custom  func(s *strip, args []arg) int
}

// wrapperTable lists the wrappers by program name. To add one, give its option grammar (POSIX:
// options end at the command) and what its options mean.
var wrapperTable map[string]*wrapper

func init() {
	sudo := &wrapper{
		g: posixGrammar("u:g:C:D:h::p:r:t:T:U:R:AbEeHiKklnPSsVvBN",
			"user= group= close-from= chdir= host= prompt= role= type= command-timeout= other-user= chroot= "+
				"preserve-env=? login shell edit list validate remove-timestamp reset-timestamp "+
				"non-interactive stdin preserve-groups background askpass set-home version help bell"),
		chdir:   []string{"D", "chdir"},
		assigns: true,
		noRun:   []string{"l", "list", "v", "validate", "K", "remove-timestamp", "V", "version", "help"},
		unknown: []string{"R", "chroot"},
	}
	sudo.custom = func(s *strip, args []arg) int {
		p := sudo.g.parse(args)
		if p.has("e", "edit") { // sudoedit: the operands are files edited
			for _, a := range p.ops {
				s.pend = append(s.pend, pending{op: Write, a: a, why: "sudo -e operand", dir: s.dir})
			}
			return -1
		}
		n := sudo.generic(s, "sudo", args, p)
		if n < 0 && (p.has("s", "shell", "i", "login")) && !p.has(sudo.noRun...) {
			s.unknowns = append(s.unknowns, "sudo starts a shell that reads its input")
		}
		return n
	}
	xargs := &wrapper{g: posixGrammar("a:d:E:e::I:i::L:l::n:P:s:0prtxo",
		"arg-file= delimiter= eof=? replace=? max-lines=? max-args= max-procs= max-chars= "+
			"process-slot-var= null no-run-if-empty verbose interactive exit open-tty show-limits help version")}
	xargs.custom = func(s *strip, args []arg) int {
		p := xargs.g.parse(args)
		for _, a := range p.vals("a", "arg-file") {
			s.pend = append(s.pend, pending{op: Read, a: a, why: "xargs -a", dir: s.dir})
		}
		s.input = "xargs"
		for _, it := range p.items {
			switch it.opt {
			case "I":
				s.replace = it.val.val
			case "i", "replace":
				s.replace = "{}"
				if it.has {
					s.replace = it.val.val
				}
			}
		}
		if p.has("help", "version", "show-limits") || p.first >= len(args) {
			s.input = ""
			return -1 // xargs alone runs echo
		}
		return p.first
	}
	parallel := &wrapper{g: posixGrammar("j:S:a:I:X",
		"jobs= sshlogin= arg-file= joblog= results= tmpdir= delay= timeout= retries= halt= memfree= "+
			"load= colsep= basefile= workdir= env= shebang semaphore pipe keep-order group line-buffer tag "+
			"verbose dry-run null quote no-notice progress bar eta")}
	parallel.custom = func(s *strip, args []arg) int {
		p := parallel.g.parse(args)
		for _, a := range p.vals("a", "arg-file") {
			s.pend = append(s.pend, pending{op: Read, a: a, why: "parallel -a", dir: s.dir})
		}
		for _, a := range p.vals("joblog") {
			s.pend = append(s.pend, pending{op: Write, a: a, why: "parallel --joblog", dir: s.dir})
		}
		for _, a := range p.vals("results") {
			s.pend = append(s.pend, pending{op: Write, a: a, why: "parallel --results", rec: true, dir: s.dir})
		}
		if p.has("dry-run") {
			return -1
		}
		start := p.first
		end := len(args)
		for i := start; i < len(args); i++ {
			if strings.HasPrefix(args[i].val, ":::") {
				end = i
				if args[i].val == "::::" && i+1 < len(args) {
					for _, f := range args[i+1:] {
						s.pend = append(s.pend, pending{op: Read, a: f, why: "parallel ::::", dir: s.dir})
					}
				}
				break
			}
		}
		if start >= end {
			s.unknowns = append(s.unknowns, "parallel runs commands read from its input")
			return -1
		}
		for _, a := range args[start:end] {
			if strings.ContainsAny(a.val, " \t\n;|&") {
				s.unknowns = append(s.unknowns, "parallel runs shell code built from its input")
				return -1
			}
		}
		s.input = "parallel"
		s.replace = "{"
		s.end = 1 + end // the arguments after ::: are input
		return start
	}
	env := &wrapper{
		g: posixGrammar("C:S:u:a:0iv",
			"chdir= split-string= unset= argv0= ignore-environment null debug block-signal=? "+
				"default-signal=? ignore-signal=? list-signal-handling help version"),
		assigns: true,
		chdir:   []string{"C", "chdir"},
		noRun:   []string{"help", "version"},
	}
	env.custom = func(s *strip, args []arg) int {
		p := env.g.parse(args)
		if sv, ok := p.val("S", "split-string"); ok {
			// -S splits a string into the command: close enough to shell words
			a := sv
			rest := args[p.first:]
			if len(rest) > 0 {
				var b strings.Builder
				b.WriteString(sv.val)
				for _, r := range rest {
					b.WriteByte(' ')
					b.WriteString(r.src)
					a.dyn = a.dyn || r.dyn
				}
				a.val = b.String()
				a.segs = []seg{{text: a.val, dyn: a.dyn, quoted: true}}
			}
			s.codes = append(s.codes, codeRun{a: a, via: "env -S"})
			return -1
		}
		return env.generic(s, "env", args, p)
	}
	flock := &wrapper{g: posixGrammar("w:E:c:sxnuoFhv",
		"timeout= wait= conflict-exit-code= command= shared exclusive nonblock nb unlock close no-fork verbose help version")}
	flock.custom = func(s *strip, args []arg) int {
		p := flock.g.parse(args)
		if c, ok := p.val("c", "command"); ok {
			s.codes = append(s.codes, codeRun{a: c, via: "flock -c"})
		}
		i := p.first
		if i >= len(args) {
			return -1
		}
		if !isNumber(args[i].val) {
			s.pend = append(s.pend, pending{op: Write, a: args[i], why: "flock lock file", dir: s.dir})
		}
		i++
		if i < len(args) && (args[i].val == "-c" || args[i].val == "--command") {
			if i+1 < len(args) {
				s.codes = append(s.codes, codeRun{a: args[i+1], via: "flock -c"})
			}
			return -1
		}
		if i >= len(args) {
			return -1
		}
		return i
	}
	watch := &wrapper{g: posixGrammar("n:d::gtbecxpqw",
		"interval= differences=? chgexit equexit errexit beep color no-color exec no-title precise no-wrap no-rerun help version")}
	watch.custom = func(s *strip, args []arg) int {
		p := watch.g.parse(args)
		if p.first >= len(args) || p.has("help", "version") {
			return -1
		}
		if p.has("x", "exec") {
			return p.first
		}
		// without -x, watch runs its arguments joined by spaces with sh -c
		s.codes = append(s.codes, codeRun{a: joinArgs(args[p.first:]), via: "watch"})
		return -1
	}
	su := &wrapper{g: newGrammar("c:s:g:G:w:lmpfPh",
		"command= session-command= shell= group= supp-group= whitelist-environment= login "+
			"preserve-environment fast pty help version")}
	su.custom = func(s *strip, args []arg) int {
		p := su.g.parse(args)
		if c, ok := p.val("c", "command", "session-command"); ok {
			s.codes = append(s.codes, codeRun{a: c, via: "su -c"})
			return -1
		}
		if !p.has("help", "version") {
			s.unknowns = append(s.unknowns, "su starts a shell that reads its input")
		}
		return -1
	}
	runuser := &wrapper{g: posixGrammar("u:c:s:g:G:w:lmpfPh",
		"user= command= session-command= shell= group= supp-group= whitelist-environment= login "+
			"preserve-environment fast pty help version")}
	runuser.custom = func(s *strip, args []arg) int {
		p := runuser.g.parse(args)
		if p.has("u", "user") && p.first < len(args) {
			return p.first
		}
		return su.custom(s, args)
	}
	script := &wrapper{g: newGrammar("c:t::T:I:O:B:E:m:aefqhV",
		"command= timing=? log-timing= log-in= log-out= log-io= echo= logging-format= append "+
			"return flush force quiet output-limit= help version")}
	script.custom = func(s *strip, args []arg) int {
		p := script.g.parse(args)
		for _, a := range p.ops {
			s.pend = append(s.pend, pending{op: Write, a: a, why: "script typescript", dir: s.dir})
		}
		for _, a := range p.vals("T", "t", "timing", "log-timing", "I", "log-in", "O", "log-out", "B", "log-io") {
			s.pend = append(s.pend, pending{op: Write, a: a, why: "script log", dir: s.dir})
		}
		if c, ok := p.val("c", "command"); ok {
			s.codes = append(s.codes, codeRun{a: c, via: "script -c"})
		} else if !p.has("h", "help", "V", "version") {
			s.unknowns = append(s.unknowns, "script starts a shell that reads its input")
		}
		return -1
	}
	chroot := &wrapper{g: posixGrammar("", "userspec= groups= skip-chdir help version")}
	chroot.custom = func(s *strip, args []arg) int {
		p := chroot.g.parse(args)
		if p.first < len(args) {
			s.unknowns = append(s.unknowns, "chroot runs its command under another root directory")
		}
		return -1
	}
	// sg GROUP [-c] COMMAND runs COMMAND, a string, with sh -c
	sg := &wrapper{g: posixGrammar("", "help version")}
	sg.custom = func(s *strip, args []arg) int {
		p := sg.g.parse(args)
		i := p.first + 1
		if i < len(args) && args[i].lit() && args[i].val == "-c" {
			i++
		}
		if i < len(args) {
			s.codes = append(s.codes, codeRun{a: joinArgs(args[i:]), via: "sg"})
		}
		return -1
	}
	exec := &wrapper{g: posixGrammar("a:cl", "")}
	exec.custom = func(s *strip, args []arg) int {
		n := exec.generic(s, "exec", args, exec.g.parse(args))
		if n >= 0 {
			s.exec = true
		}
		return n
	}

	wrapperTable = map[string]*wrapper{
		"sudo":       sudo,
		"doas":       {g: posixGrammar("u:C:nsL", ""), noRun: []string{"C", "L"}},
		"pkexec":     {g: posixGrammar("", "user= disable-internal-agent keep-cwd help version")},
		"env":        env,
		"timeout":    {g: posixGrammar("s:k:vf", "signal= kill-after= preserve-status foreground verbose help version"), skip: 1},
		"nice":       {g: posixGrammar("n:", "adjustment= help version")},
		"nohup":      {g: posixGrammar("", "help version")},
		"stdbuf":     {g: posixGrammar("i:o:e:", "input= output= error= help version")},
		"ionice":     {g: posixGrammar("c:n:p:P:u:t", "class= classdata= pid= pgid= uid= ignore help version"), noRun: []string{"p", "P", "u", "pid", "pgid", "uid"}},
		"chrt":       {g: posixGrammar("T:P:D:abdfiomprRv", "sched-runtime= sched-period= sched-deadline= pid max verbose all-tasks batch deadline fifo idle other rr reset-on-fork help version"), skip: 1, noRun: []string{"p", "pid", "m", "max"}},
		"taskset":    {g: posixGrammar("acp", "all-tasks cpu-list pid help version"), skip: 1, noRun: []string{"p", "pid"}},
		"setsid":     {g: posixGrammar("cfw", "ctty fork wait help version")},
		"command":    {g: posixGrammar("pvV", ""), noRun: []string{"v", "V"}},
		"builtin":    {g: posixGrammar("", "")},
		"exec":       exec,
		"time":       {g: posixGrammar("f:o:apqv", "format= output= append portability quiet verbose help version"), writes: []string{"o", "output"}},
		"xargs":      xargs,
		"parallel":   parallel,
		"caffeinate": {g: posixGrammar("t:w:dimsu", "")},
		"unbuffer":   {g: posixGrammar("p", "")},
		"flock":      flock,
		"watch":      watch,
		"busybox":    {g: posixGrammar("", "list install help")},
		"su":         su,
		"runuser":    runuser,
		"script":     script,
		"chroot":     chroot,
		"sg":         sg,
		"systemd-run": {g: posixGrammar("u:p:E:H:M:qrGdPt",
			"unit= property= description= slice= setenv= uid= gid= nice= working-directory= host= machine= "+
				"on-active= on-boot= on-startup= on-unit-active= on-unit-inactive= on-calendar= timer-property= "+
				"path-property= socket-property= service-type= json= user system scope remain-after-exit "+
				"send-sighup wait pipe quiet collect same-dir pty shell no-block help version"),
			chdir: []string{"working-directory"}},
		"strace":   {g: posixGrammar("e:o:p:s:u:E:P:I:X:a:b:O:S:U:cCdDfFhiqrtTvVwxyYzZk", ""), writes: []string{"o"}, noRun: []string{"p"}},
		"ltrace":   {g: posixGrammar("e:o:p:s:u:a:n:l:x:L:A:D:bcCfhiSrtTV", "output= library= align= indent= help version"), writes: []string{"o", "output"}, noRun: []string{"p"}},
		"valgrind": {g: posixGrammar("", "log-file= xml-file= tool= help version"), writes: []string{"log-file", "xml-file"}},
		"uv":       {sub: []string{"run"}, g: posixGrammar("p:", "with= with-editable= with-requirements= python= directory= project= package= extra= group= only-group= env-file= index= default-index= index-url= extra-index-url= find-links= no-project isolated frozen locked no-sync all-extras all-packages script gui-script module"), chdir: []string{"directory"}},
		"poetry":   {sub: []string{"run"}, g: posixGrammar("C:P:", "directory= project= no-interaction quiet verbose"), chdir: []string{"C", "directory"}},
		"pipenv":   {sub: []string{"run"}, g: posixGrammar("", "")},
		"pdm":      {sub: []string{"run"}, g: posixGrammar("p:g", "project= global")},
		"conda":    {sub: []string{"run"}, g: posixGrammar("n:p:", "name= prefix= cwd= live-stream no-capture-output"), chdir: []string{"cwd"}},
		"bundle":   {sub: []string{"exec"}, g: posixGrammar("", "")},
	}
}

// apply strips the wrapper's own arguments from args.
func (wr *wrapper) apply(s *strip, name string, args []arg) int {
	if wr.custom != nil {
		return wr.custom(s, args)
	}
	skip := 0
	if len(wr.sub) > 0 {
		if len(args) == 0 || !args[0].lit() || !contains(wr.sub, args[0].val) {
			return -1
		}
		name += " " + args[0].val
		skip = 1
	}
	n := wr.generic(s, name, args[skip:], wr.g.parse(args[skip:]))
	if n < 0 {
		return n
	}
	return n + skip
}

// generic applies a wrapper's declared options, skips its leading operands and returns where
// the command starts.
func (wr *wrapper) generic(s *strip, name string, args []arg, p parsed) int {
	if len(wr.noRun) > 0 && p.has(wr.noRun...) {
		return -1
	}
	if len(wr.unknown) > 0 && p.has(wr.unknown...) {
		s.unknowns = append(s.unknowns, name+" runs its command under another root directory")
		return -1
	}
	for _, c := range wr.chdir {
		if v, ok := p.val(c); ok {
			s.chdir(v, name)
		}
	}
	for _, o := range wr.writes {
		for _, v := range p.vals(o) {
			s.pend = append(s.pend, pending{op: Write, a: v, why: name + " " + dashes(o), dir: s.dir})
		}
	}
	i := p.first
	if wr.assigns {
		for i < len(args) && isAssign(args[i]) {
			eq := strings.IndexByte(args[i].val, '=')
			s.w.assignVar(args[i].val[:eq], args[i].val[eq+1:], args[i].src, args[i].pos)
			i++
		}
	}
	i += wr.skip
	if i >= len(args) {
		return -1
	}
	return i
}

// dashes spells an option's name as given on a command line: -o, --output.
func dashes(o string) string {
	if len(o) > 1 {
		return "--" + o
	}
	return "-" + o
}

// isAssign reports a NAME=value word.
func isAssign(a arg) bool {
	eq := strings.IndexByte(a.val, '=')
	if eq <= 0 || eq >= a.litPrefix() {
		return false
	}
	for i := 0; i < eq; i++ {
		c := a.val[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// joinArgs joins arguments with spaces, as watch and eval do, into one argument.
func joinArgs(args []arg) arg {
	if len(args) == 1 {
		return args[0]
	}
	var out arg
	var b, src strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
			src.WriteByte(' ')
		}
		b.WriteString(a.val)
		src.WriteString(a.src)
		out.dyn = out.dyn || !a.lit()
		out.input = out.input || a.input
	}
	out.val = b.String()
	out.segs = []seg{{text: out.val, dyn: out.dyn, quoted: true}}
	out.src = src.String()
	if len(args) > 0 {
		out.pos = args[0].pos
	}
	return out
}
