package slot

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/slotq/slotq/internal/input"
)

func TestValidatePattern(t *testing.T) {
	good := []string{
		"https://hooks.example.com/*", "https://hooks.example.com/v1/send", "https://hooks.example.com",
		"http://*", "https://*.example.com/*", "http://127.0.0.1:*", "https://[2001:db8::1]:8443/x*",
		"lambda:send-email", "lambda:send-*", "lambda:send-email:prod", "lambda:send-email:*",
		"arn:aws:lambda:eu-west-1:123456789012:function:mailer",
		"arn:aws:lambda:eu-west-1:123456789012:function:mail*",
	}
	for _, p := range good {
		if err := ValidatePattern(p); err != nil {
			t.Errorf("ValidatePattern(%q) = %v; want ok", p, err)
		}
	}
	bad := []string{
		"*", "", " https://x/", "file:///*", "ftp://*", "gopher://x/", "https://hooks.example.com*",
		"https://user@hooks.example.com/*", "https://hooks.*.com/", "https://x/*/y", "https://x/a?b=*",
		"lambda:*", "lambda:", "lambda:../../x", "arn:aws:lambda:", "arn:aws:lambda:*",
		"arn:aws:lambda:eu-west-1:123456789012:function:*", "https://2852039166/*", "https://0x7f.1/*",
		"https://x:99999/", "https://x:08/", "https://[fe80::1%25eth0]/", "https://a..b/",
		"https://x" + strings.Repeat("/y", MaxTargetLen),
	}
	for _, p := range bad {
		if err := ValidatePattern(p); err == nil {
			t.Errorf("ValidatePattern(%q) = nil; want an error", p)
		}
	}
}

func TestCheckTarget(t *testing.T) {
	c := Config{Targets: []string{
		"https://hooks.example.com/*", "https://api.example.com/v1/*", "https://exact.example.com/hook",
		"http://*", "https://*.svc.example.com", "lambda:send-*", "arn:aws:lambda:eu-west-1:123456789012:function:report",
	}}
	allowed := []string{
		"https://hooks.example.com/", "https://hooks.example.com/a/b?x=1", "https://api.example.com/v1/jobs",
		"https://exact.example.com/hook", "https://exact.example.com/hook?q=1", "https://HOOKS.example.com/x",
		"http://anything.example.org/", "https://a.svc.example.com/deep/path", "https://hooks.example.com:443/x",
		"lambda:send-email", "lambda:send-email:prod", "arn:aws:lambda:eu-west-1:123456789012:function:report",
		"http://93.184.215.14/x",
	}
	for _, target := range allowed {
		if err := c.CheckTarget(target); err != nil {
			t.Errorf("CheckTarget(%q) = %v; want allowed", target, err)
		}
	}
	refused := []string{
		// string-prefix tricks, other hosts, ports, paths, schemes
		"https://hooks.example.com@169.254.169.254/latest/meta-data/",
		"https://hooks.example.com.evil.example/x", "https://hooks.example.com:8443/x",
		"https://api.example.com/v2/jobs", "https://api.example.com/v1/../admin", "https://api.example.com/v1/%2e%2e/admin",
		"https://api.example.com/v1%2f..%2fadmin", "https://exact.example.com/hook/more", "https://svc.example.com/",
		"http://hooks.example.com/x#frag", "ftp://hooks.example.com/", "file:///etc/passwd", "javascript:alert(1)",
		// address classes, in every spelling
		"http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/latest/", "http://2852039166/latest/",
		"http://0xa9fea9fe/", "http://0251.0376.0251.0376/", "http://127.1/", "http://127.0.0.1:2375/containers/json",
		"http://127.0.0.1/", "http://[::1]/", "http://[::ffff:169.254.169.254]/", "http://[::ffff:127.0.0.1]/",
		"http://[64:ff9b::a9fe:a9fe]/", "http://10.0.0.8/", "http://192.168.1.1/", "http://172.16.0.1/",
		"http://0.0.0.0/", "http://[::]/", "http://[fe80::1]/", "http://[fc00::1]/", "http://100.64.0.1/",
		"http://localhost/", "http://api.localhost/", "http://255.255.255.255/", "http://010.0.0.1/",
		// Lambda names
		"lambda:*", "lambda:", "lambda:../../x", "arn:aws:lambda:", "lambda:report", "lambda:send email",
		"arn:aws:lambda:eu-west-1:123456789012:function:other",
		"https://hooks.example.com/" + strings.Repeat("a", MaxTargetLen),
	}
	for _, target := range refused {
		if err := c.CheckTarget(target); err == nil {
			t.Errorf("CheckTarget(%q) = nil; want refused", target)
		}
	}
}

// allow_networks is the one way a queue opts in to private addresses, and
// only for the prefixes it lists.
func TestAllowNetworks(t *testing.T) {
	c := Config{Targets: []string{"http://*:*"}, AllowNetworks: []string{"10.1.0.0/16", "127.0.0.1/32"}}
	for _, target := range []string{"http://10.1.2.3:8080/", "http://127.0.0.1:2375/", "http://[::ffff:127.0.0.1]/"} {
		if err := c.CheckTarget(target); err != nil {
			t.Errorf("CheckTarget(%q) = %v; want allowed", target, err)
		}
	}
	for _, target := range []string{"http://10.2.0.1/", "http://169.254.169.254/", "http://[::1]/"} {
		if err := c.CheckTarget(target); err == nil {
			t.Errorf("CheckTarget(%q) = nil; want refused", target)
		}
	}
	for _, bad := range [][]string{{"10.1.2.3/16"}, {"nonsense"}, {"10.0.0.0/33"}} {
		c := Config{AllowNetworks: bad}.WithDefaults()
		if err := c.Validate(); err == nil || err.(*input.Error).Field != "allow_networks[0]" {
			t.Errorf("Validate with allow_networks %v = %v; want an error on allow_networks[0]", bad, err)
		}
	}
}

func TestAddrClass(t *testing.T) {
	tests := map[string]string{
		"169.254.169.254": "metadata", "fd00:ec2::254": "metadata", "127.0.0.53": "loopback", "::1": "loopback",
		"10.9.8.7": "private", "fd12::1": "unique-local", "fe80::1": "link-local", "169.254.1.1": "link-local",
		"0.0.0.0": "unspecified", "::": "unspecified", "::ffff:10.0.0.1": "private", "64:ff9b::7f00:1": "loopback",
		"::127.0.0.1": "loopback", "::169.254.169.254": "metadata", "::ffff:0:a00:1": "private", "2002:a9fe:a9fe::1": "metadata",
		"2001:0:4136:e378:8000:63bf:80ff:fffe": "loopback", "fe80::1%eth0": "link-local", "::8.8.8.8": "",
		"93.184.215.14": "", "2606:2800:21f:cb07:6820:80da:af6b:8b2c": "",
	}
	for in, want := range tests {
		if got := AddrClass(netip.MustParseAddr(in)); got != want {
			t.Errorf("AddrClass(%s) = %q; want %q", in, got, want)
		}
	}
}

func TestValidateTargetsSize(t *testing.T) {
	c := Config{}.WithDefaults()
	for range MaxTargetPatterns + 1 {
		c.Targets = append(c.Targets, "lambda:x")
	}
	if err := c.Validate(); err == nil || err.(*input.Error).Field != "targets" {
		t.Fatalf("Validate with %d patterns = %v; want an error on targets", len(c.Targets), err)
	}
}

// An IPv6 address that carries an IPv4 address is judged by it: mapped,
// compatible, translated, NAT64, 6to4 and Teredo forms; :: and ::1 are
// IPv6's own.
func TestJudgedAddr(t *testing.T) {
	tests := map[string]string{
		"::ffff:169.254.169.254": "169.254.169.254", "::127.0.0.1": "127.0.0.1", "::ffff:0:a00:1": "10.0.0.1",
		"64:ff9b::a9fe:a9fe": "169.254.169.254", "64:ff9b:1::a00:1": "10.0.0.1", "2002:7f00:1::": "127.0.0.1",
		"2001:0:4136:e378:8000:63bf:80ff:fffe": "127.0.0.1", "::1": "::1", "::": "::", "fe80::1%eth0": "fe80::1",
		"2606:2800:21f:cb07::1": "2606:2800:21f:cb07::1", "10.0.0.1": "10.0.0.1",
	}
	for in, want := range tests {
		if got := JudgedAddr(netip.MustParseAddr(in)); got != netip.MustParseAddr(want) {
			t.Errorf("JudgedAddr(%s) = %s; want %s", in, got, want)
		}
	}
}

// An IPv6 allow_networks prefix, however wide, does not allow an address
// judged by the IPv4 address it carries: the enqueue check refuses what
// the worker's dial-time check would (internal/dispatch tests the dial).
func TestEmbeddedIPv4AtEnqueue(t *testing.T) {
	anyV6 := Config{Targets: []string{"http://*:*"}, AllowNetworks: []string{"::/0"}}
	for _, target := range []string{
		"http://[::ffff:169.254.169.254]/latest/meta-data/", "http://[::ffff:127.0.0.1]:8080/",
		"http://[::127.0.0.1]:8080/", "http://[::ffff:a00:1]/", "http://[2002:a9fe:a9fe::]/", "http://[64:ff9b::7f00:1]/",
	} {
		if err := anyV6.CheckTarget(target); err == nil {
			t.Errorf("CheckTarget(%q) with allow_networks [::/0] = nil; want refused", target)
		}
	}
	if err := anyV6.CheckTarget("http://[::1]:8080/"); err != nil {
		t.Errorf("CheckTarget of IPv6 loopback with [::/0] = %v; want allowed", err)
	}
	v4 := Config{Targets: []string{"http://*:*"}, AllowNetworks: []string{"127.0.0.1/32"}}
	for _, target := range []string{"http://[::ffff:127.0.0.1]:8080/", "http://[::127.0.0.1]:8080/", "http://127.0.0.1:8080/"} {
		if err := v4.CheckTarget(target); err != nil {
			t.Errorf("CheckTarget(%q) with allow_networks [127.0.0.1/32] = %v; want allowed", target, err)
		}
	}
}

// A prefix made only of addresses judged by their IPv4 part could allow
// nothing: it is refused, with the IPv4 prefix to list instead.
func TestAllowNetworksEmbeddedPrefixes(t *testing.T) {
	for n, ok := range map[string]bool{
		"::ffff:127.0.0.0/104": false, "::ffff:0:0/96": false, "64:ff9b::/96": false, "2002::/16": false,
		"2001::/32": false, "::a00:0/104": false,
		"::/0": true, "::/96": true, "::1/128": true, "2001:db8::/32": true, "127.0.0.0/8": true, "2000::/3": true,
	} {
		err := Config{AllowNetworks: []string{n}}.WithDefaults().Validate()
		var ie *input.Error
		switch {
		case ok && err != nil:
			t.Errorf("Validate(allow_networks [%s]) = %v; want ok", n, err)
		case !ok && (!errors.As(err, &ie) || ie.Code != "invalid_network" || ie.Field != "allow_networks[0]"):
			t.Errorf("Validate(allow_networks [%s]) = %v; want invalid_network on allow_networks[0]", n, err)
		}
	}
}
