package shell

import (
	"strings"
)

func init() {
	register(&program{kind: kindChanges, g: newGrammar("A:b:c:C:d:D:e:E:F:H:K:m:o:P:Q:r:t:T:u:U:w:x:X:y:Y:z:",
		"output= output-dir= upload-file= data= data-binary= data-raw= data-ascii= data-urlencode= json= form= "+
			"form-string= header= request= user-agent= user= referer= proxy= max-time= connect-timeout= write-out= "+
			"config= cookie= cookie-jar= dump-header= trace= trace-ascii= cacert= capath= cert= key= retry= "+
			"retry-delay= retry-max-time= range= resolve= url= limit-rate= continue-at= stderr= netrc-file= variable= "+
			"etag-save= etag-compare= hsts= alt-svc= libcurl= unix-socket= abstract-unix-socket= interface= "+
			"local-port= speed-limit= speed-time= max-filesize= max-redirs= proto= proto-redir= proto-default= "+
			"create-file-mode= aws-sigv4= oauth2-bearer= cert-type= key-type= pass= ciphers= tls-max= "+
			"connect-to= dns-servers= doh-url= expect100-timeout= happy-eyeballs-timeout-ms= keepalive-time= "+
			"preproxy= proxy-user= proxy-header= socks5= socks5-hostname= quote= time-cond= url-query= "+
			"remote-name remote-name-all remote-header-name location silent show-error fail include head "+
			"insecure verbose compressed create-dirs globoff"), run: curl}, "curl")
	register(&program{kind: kindChanges, g: newGrammar("O:o:a:P:i:B:e:T:t:w:Q:U:l:D:A:R:I:X:",
		"output-document= output-file= append-output= directory-prefix= input-file= base= execute= timeout= "+
			"tries= wait= quota= user-agent= level= domains= accept= reject= include-directories= "+
			"exclude-directories= post-data= post-file= body-file= body-data= header= user= password= "+
			"http-user= http-password= load-cookies= save-cookies= certificate= private-key= ca-certificate= "+
			"method= referer= limit-rate= max-redirect= local-encoding= remote-encoding= config= cut-dirs= "+
			"default-page= warc-file= rejected-log= restrict-file-names= bind-address= dns-timeout= "+
			"connect-timeout= read-timeout= waitretry= proxy-user= proxy-password= accept-regex= reject-regex= "+
			"recursive mirror page-requisites force-directories spider quiet verbose no-verbose continue "+
			"timestamping no-clobber no-directories no-parent convert-links adjust-extension"), run: wget}, "wget")
	register(&program{kind: kindChanges, g: newGrammar("e:B:f:T:M:",
		"rsh= rsync-path= exclude= include= exclude-from= include-from= files-from= filter= log-file= "+
			"log-file-format= backup-dir= suffix= partial-dir= temp-dir= compare-dest= copy-dest= link-dest= "+
			"chmod= chown= usermap= groupmap= timeout= contimeout= bwlimit= max-size= min-size= max-delete= "+
			"block-size= port= sockopts= out-format= password-file= write-batch= only-write-batch= read-batch= "+
			"protocol= iconv= checksum-choice= compress-choice= compress-level= skip-compress= modify-window= "+
			"info= debug= outbuf= remote-option= early-input= stop-after= stop-at= address= "+
			"archive recursive delete delete-before delete-during delete-delay delete-after delete-excluded del "+
			"remove-source-files dry-run list-only verbose quiet"), run: rsync}, "rsync")
	register(&program{kind: kindChanges, g: newGrammar("c:F:i:J:l:o:P:S:D:X:", ""), run: scp}, "scp")
	register(&program{kind: kindReads, g: newGrammar("B:b:c:D:E:e:F:I:i:J:L:l:m:O:o:p:Q:R:S:W:w:", ""),
		run: func(c *call, p *parsed) {
			sshFiles(c, p, "ssh")
			// a remote command runs on the other host: no local file effects
		}}, "ssh")
}

// sshFiles handles the options ssh and scp share: the files they read and write, and the
// local commands -o can make them run.
func sshFiles(c *call, p *parsed, name string) {
	for _, a := range p.vals("F", "i") {
		c.read(a, name+" "+"config or identity", false)
	}
	for _, a := range p.vals("E") {
		c.write(a, name+" -E", false)
	}
	for _, o := range p.vals("o") {
		k := strings.ToLower(o.val)
		if !o.lit() || strings.HasPrefix(k, "proxycommand") || strings.HasPrefix(k, "localcommand") ||
			strings.HasPrefix(k, "knownhostscommand") || strings.HasPrefix(k, "permitlocalcommand") {
			c.unknown(name + " runs a local command (-o " + o.val + ")")
		}
	}
}

// remote reports an rsync or scp operand on another host: host:path or a URL.
func remote(a arg) bool {
	if !a.lit() {
		return false
	}
	v := a.val
	if strings.Contains(v, "://") {
		return true
	}
	i := strings.IndexByte(v, ':')
	return i > 0 && !strings.Contains(v[:i], "/")
}

// urlBase is the last path segment of a URL, the name curl -O and wget save it as.
func urlBase(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	i := strings.IndexByte(u, '/')
	if i < 0 {
		return ""
	}
	u = u[i:]
	return u[strings.LastIndexByte(u, '/')+1:]
}

func curl(c *call, p *parsed) {
	outDir, hasDir := p.val("output-dir")
	if !hasDir {
		outDir = litArg(".", c.text, c.pos)
	}
	inDir := func(a arg) arg {
		if !hasDir || !a.lit() || strings.HasPrefix(a.val, "/") || a.tilde() {
			return a
		}
		return joinBase(outDir, litArg(a.val, a.src, a.pos))
	}
	for _, a := range p.vals("o", "output") {
		c.write(inDir(a), "curl -o", false)
	}
	urls := append(p.vals("url"), p.ops...)
	if p.has("J", "remote-header-name") {
		c.write(outDir, "curl -J (name chosen by the server)", true)
	} else if p.has("O", "remote-name", "remote-name-all") {
		for _, u := range urls {
			if u.input {
				continue
			}
			if !u.lit() {
				c.write(outDir, "curl -O (name from the URL)", true)
				continue
			}
			if b := urlBase(u.val); b != "" && b != "." && b != ".." {
				c.write(joinBase(outDir, litArg(b, u.src, u.pos)), "curl -O", false)
			}
		}
	}
	for _, a := range p.vals("T", "upload-file") {
		c.read(a, "curl upload", false)
	}
	for _, u := range urls {
		c.fileURL(u)
	}
	for _, it := range p.items {
		if !it.has {
			continue
		}
		v := it.val
		switch it.opt {
		case "d", "data", "data-binary", "data-ascii", "json":
			if strings.HasPrefix(v.val, "@") {
				c.read(v.suffix(1), "curl data file", false)
			}
		case "data-urlencode":
			at := strings.IndexByte(v.val, '@')
			if at >= 0 && !strings.Contains(v.val[:at], "=") {
				c.read(v.suffix(at+1), "curl data file", false)
			}
		case "F", "form":
			if eq := strings.IndexByte(v.val, '='); eq >= 0 && eq+1 < len(v.val) &&
				(v.val[eq+1] == '@' || v.val[eq+1] == '<') {
				f := v.suffix(eq + 2)
				if semi := strings.IndexByte(f.val, ';'); semi >= 0 && f.lit() {
					f = litArg(f.val[:semi], f.src, f.pos)
				}
				c.read(f, "curl form file", false)
			}
		case "b", "cookie":
			if !strings.Contains(v.val, "=") {
				c.read(v, "curl cookie file", false)
			}
		case "c", "cookie-jar", "D", "dump-header", "trace", "trace-ascii", "stderr", "libcurl", "etag-save":
			c.write(v, "curl --"+it.opt, false)
		case "netrc-file", "etag-compare", "E", "cert", "key", "cacert":
			c.read(v, "curl --"+it.opt, false)
		case "K", "config":
			c.read(v, "curl config", false)
			c.unknown("curl reads more options from a file (-K)")
		}
	}
}

func wget(c *call, p *parsed) {
	for _, it := range p.items {
		if !it.has {
			continue
		}
		v := it.val
		switch it.opt {
		case "o", "output-file", "a", "append-output", "rejected-log", "save-cookies", "warc-file":
			c.write(v, "wget --"+it.opt, false)
		case "i", "input-file", "post-file", "body-file", "load-cookies", "certificate", "private-key",
			"ca-certificate", "config":
			if !strings.Contains(v.val, "://") {
				c.read(v, "wget --"+it.opt, false)
			}
		case "e", "execute":
			k := strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(v.val))
			if !v.lit() || strings.Contains(k, "output") || strings.Contains(k, "prefix") ||
				strings.Contains(k, "file") || strings.Contains(k, "log") || strings.Contains(k, "cookies") ||
				strings.Contains(k, "dir") {
				c.unknown("wget -e sets where it reads or writes (" + v.val + ")")
			}
		}
	}
	if p.has("spider") {
		return
	}
	if outs := p.vals("O", "output-document"); len(outs) > 0 {
		for _, a := range outs {
			c.write(a, "wget -O", false)
		}
		return
	}
	prefix, ok := p.val("P", "directory-prefix")
	if !ok {
		prefix = litArg(".", c.text, c.pos)
	}
	if p.has("r", "recursive", "m", "mirror", "p", "page-requisites", "x", "force-directories", "i", "input-file") {
		c.write(prefix, "wget download", true)
		return
	}
	for _, u := range p.ops {
		if u.input {
			continue
		}
		if !u.lit() {
			c.write(prefix, "wget download (name from the URL)", true)
			continue
		}
		b := urlBase(u.val)
		if b == "" {
			b = "index.html"
		}
		if b == "." || b == ".." {
			continue
		}
		c.write(joinBase(prefix, litArg(b, u.src, u.pos)), "wget download", false)
	}
}

func rsync(c *call, p *parsed) {
	rec := p.has("r", "recursive", "a", "archive")
	for _, a := range p.vals("files-from", "exclude-from", "include-from", "password-file", "read-batch") {
		c.read(a, "rsync --list", false)
	}
	for _, a := range p.vals("log-file", "write-batch", "only-write-batch") {
		c.write(a, "rsync log", false)
	}
	for _, a := range p.vals("backup-dir", "partial-dir", "temp-dir", "T") {
		if !remote(a) {
			c.write(a, "rsync work directory", true)
		}
	}
	for _, e := range p.vals("e", "rsh") {
		f := strings.Fields(e.val)
		if !e.lit() || len(f) == 0 || baseName(f[0]) != "ssh" && baseName(f[0]) != "rsh" {
			c.unknown("rsync runs a remote-shell command (-e " + e.val + ")")
		}
	}
	if p.has("n", "dry-run", "list-only") || len(p.ops) < 2 {
		for _, a := range p.ops {
			if !remote(a) {
				c.read(a, "rsync source", rec)
			}
		}
		return
	}
	srcs, dst := p.ops[:len(p.ops)-1], p.ops[len(p.ops)-1]
	remove := p.has("remove-source-files")
	for _, s := range srcs {
		if remote(s) {
			continue
		}
		c.read(s, "rsync source", rec)
		if remove {
			c.del(s, "rsync --remove-source-files", rec)
		}
	}
	if remote(dst) || dst.input {
		return
	}
	switch {
	case len(srcs) == 1 && srcs[0].lit() && !srcs[0].glob() && !remote(srcs[0]):
		// one local source: src/ copies its contents into dst, src copies itself into
		// dst/src (into); either way the names written are those under src
		if strings.HasSuffix(srcs[0].val, "/") {
			c.writeFrom(dst, "rsync target", rec, srcs[0])
		} else {
			c.write(dst, "rsync target", false)
		}
	default:
		c.write(dst, "rsync target", rec)
	}
	c.into(dst, srcs, "rsync", rec, false)
	if p.has("delete", "delete-before", "delete-during", "delete-delay", "delete-after", "delete-excluded", "del") {
		c.del(dst, "rsync --delete", true)
	}
}

func scp(c *call, p *parsed) {
	sshFiles(c, p, "scp")
	if p.has("S") {
		c.unknown("scp runs a program of its choosing (-S)")
	}
	rec := p.has("r")
	if len(p.ops) < 2 {
		return
	}
	srcs, dst := p.ops[:len(p.ops)-1], p.ops[len(p.ops)-1]
	for _, s := range srcs {
		if !remote(s) {
			c.read(s, "scp source", rec)
		}
	}
	if remote(dst) || dst.input {
		return
	}
	c.write(dst, "scp target", rec)
	c.into(dst, srcs, "scp", rec, false)
}
