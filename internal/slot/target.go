package slot

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/slotq/slotq/internal/input"
)

// Limits of targets and of a queue's allow-list. They keep a job record
// and a queue record far inside DynamoDB's 400 KB item.
const (
	// MaxTargetLen is the longest target or target pattern, in bytes.
	MaxTargetLen = 2048
	// MaxTargetPatterns is the most entries of a queue's targets.
	MaxTargetPatterns = 64
	// MaxAllowNetworks is the most entries of a queue's allow_networks.
	MaxAllowNetworks = 32
)

// A Target is a job target, parsed: an HTTP(S) URL or a Lambda function.
type Target struct {
	// URL is set for an HTTP target.
	URL *url.URL
	// Host is the URL's host, lower-case, without brackets; Port is its
	// port, the scheme's default if the URL names none.
	Host, Port string
	// Function is, for a Lambda target, NAME[:QUALIFIER] of "lambda:NAME"
	// or the whole ARN; ARN tells which.
	Function string
	ARN      bool
}

var (
	lambdaNameRE   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9_$-]{1,128})?$`)
	lambdaPrefixRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9_$-]{0,128})?$`)
	lambdaARNRE    = regexp.MustCompile(`^arn:aws(-[a-z]+)*:lambda:[a-z]{2}(-[a-z]+)+-[0-9]:[0-9]{12}:function:`)
	dnsLabelRE     = regexp.MustCompile(`^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$`)
)

// ParseTarget parses and checks a job target: an http(s) URL without user
// info or fragment, whose host is a DNS name or a plain IP address (no
// decimal, octal or hex forms of IPv4) and whose path has no dot segments
// or encoded slashes; "lambda:NAME[:QUALIFIER]"; or a Lambda function ARN.
func ParseTarget(s string) (Target, error) {
	if err := checkChars(s); err != nil {
		return Target{}, err
	}
	switch {
	case strings.HasPrefix(s, "lambda:"):
		name := strings.TrimPrefix(s, "lambda:")
		if !lambdaNameRE.MatchString(name) {
			return Target{}, errors.New("a Lambda target is lambda:NAME or lambda:NAME:QUALIFIER, NAME of [A-Za-z0-9_-]{1,64}")
		}
		return Target{Function: name}, nil
	case strings.HasPrefix(s, "arn:"):
		rest, ok := cutARN(s)
		if !ok || !lambdaNameRE.MatchString(rest) {
			return Target{}, errors.New("a Lambda ARN is arn:aws:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER]")
		}
		return Target{Function: s, ARN: true}, nil
	case strings.HasPrefix(s, "http://"), strings.HasPrefix(s, "https://"):
		return parseHTTPTarget(s)
	}
	return Target{}, errors.New("a target is an http:// or https:// URL, lambda:NAME or a Lambda function ARN")
}

func cutARN(s string) (string, bool) {
	loc := lambdaARNRE.FindStringIndex(s)
	if loc == nil {
		return "", false
	}
	return s[loc[1]:], true
}

func checkChars(s string) error {
	if len(s) == 0 || len(s) > MaxTargetLen {
		return fmt.Errorf("a target is 1 to %d bytes long", MaxTargetLen)
	}
	for i := range len(s) {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return errors.New("a target is printable ASCII without spaces (percent-encode the rest)")
		}
	}
	return nil
}

func parseHTTPTarget(s string) (Target, error) {
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" || u.Host == "" {
		return Target{}, errors.New("target is not a valid URL")
	}
	switch {
	case u.User != nil || strings.Contains(u.Host, "@"):
		return Target{}, errors.New("a target URL must not carry user info (user@host)")
	case u.Fragment != "" || strings.Contains(s, "#"):
		return Target{}, errors.New("a target URL must not carry a fragment (#…)")
	}
	host, port, err := splitHostPort(u.Host, u.Scheme, false)
	if err != nil {
		return Target{}, err
	}
	p := u.EscapedPath()
	if lower := strings.ToLower(p); strings.Contains(lower, "%2f") || strings.Contains(lower, "%5c") || strings.Contains(p, `\`) {
		return Target{}, errors.New("a target path must not contain encoded slashes or backslashes")
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return Target{}, errors.New("a target path must not contain . or .. segments")
		}
	}
	return Target{URL: u, Host: host, Port: port}, nil
}

// splitHostPort checks an authority (host[:port]) and returns the host,
// lower-case and canonical for IPs, and the port, the scheme's default if
// none is given. In a pattern the host may be * or *.DOMAIN and the port *.
func splitHostPort(authority, scheme string, pattern bool) (host, port string, err error) {
	host = authority
	if strings.HasPrefix(host, "[") {
		end := strings.Index(host, "]")
		if end < 0 {
			return "", "", errors.New("unclosed [ in the host")
		}
		host, port = host[1:end], host[end+1:]
		if port != "" && !strings.HasPrefix(port, ":") {
			return "", "", errors.New("bad port after ]")
		}
		port = strings.TrimPrefix(port, ":")
		a, perr := netip.ParseAddr(host)
		if perr != nil || !a.Is6() || a.Zone() != "" {
			return "", "", errors.New("the host in brackets must be an IPv6 address without zone")
		}
		host = a.String()
	} else {
		if i := strings.LastIndex(host, ":"); i >= 0 {
			host, port = host[:i], host[i+1:]
			if strings.Contains(host, ":") {
				return "", "", errors.New("an IPv6 host goes in brackets: http://[2001:db8::1]/")
			}
			if port == "" {
				return "", "", errors.New("empty port")
			}
		}
		if host, err = checkHost(strings.ToLower(host), pattern); err != nil {
			return "", "", err
		}
	}
	switch {
	case port == "":
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	case port == "*" && pattern:
	default:
		n, perr := strconv.Atoi(port)
		if perr != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return "", "", fmt.Errorf("port %q is not a number from 1 to 65535", port)
		}
	}
	return host, port, nil
}

// checkHost accepts a DNS name or a dotted-quad IPv4 address. A name whose
// last label is numeric (or hex) is no DNS name: it is one of the odd forms
// of IPv4 (2852039166, 0xa9fea9fe, 0251.0376.0251.0376, 127.1) that URL
// parsers and resolvers read differently, and is refused.
func checkHost(host string, pattern bool) (string, error) {
	if pattern {
		if host == "*" {
			return host, nil
		}
		if rest, ok := strings.CutPrefix(host, "*."); ok {
			if _, err := checkHost(rest, false); err != nil {
				return "", err
			}
			if _, err := netip.ParseAddr(rest); err == nil {
				return "", errors.New("*. goes before a DNS name, not an address")
			}
			return host, nil
		}
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Is4() {
		return a.String(), nil
	}
	name := strings.TrimSuffix(host, ".")
	labels := strings.Split(name, ".")
	if len(name) == 0 || len(name) > 253 {
		return "", fmt.Errorf("host %q is not a DNS name or IPv4 address", input.Truncate(host, 60))
	}
	for _, l := range labels {
		if !dnsLabelRE.MatchString(l) {
			return "", fmt.Errorf("host %q is not a DNS name or IPv4 address", input.Truncate(host, 60))
		}
	}
	last := labels[len(labels)-1]
	if strings.Trim(last, "0123456789") == "" || strings.HasPrefix(last, "0x") && strings.Trim(last[2:], "0123456789abcdef") == "" {
		return "", fmt.Errorf("host %q is a numeric form other than a dotted-quad IPv4 address", input.Truncate(host, 60))
	}
	return name, nil
}

// A pattern is one entry of a queue's targets, parsed.
type pattern struct {
	// HTTP: scheme, host ("*", "*.DOMAIN" or exact), port ("*" or
	// exact), path (a prefix if prefix).
	scheme, host, port, path string
	// Lambda: fn is the name or ARN (a prefix if prefix); arn tells which.
	fn       string
	arn, lam bool
	prefix   bool
}

// ValidatePattern checks one entry of a queue's targets; see Config.Targets
// for the syntax.
func ValidatePattern(p string) error {
	_, err := parsePattern(p)
	return err
}

func parsePattern(p string) (pattern, error) {
	if err := checkChars(p); err != nil {
		return pattern{}, err
	}
	body, prefix := strings.CutSuffix(p, "*")
	switch {
	case strings.HasPrefix(p, "lambda:"):
		name := strings.TrimPrefix(body, "lambda:")
		re := lambdaNameRE
		if prefix {
			re = lambdaPrefixRE
		}
		if !re.MatchString(name) {
			return pattern{}, errors.New("a Lambda pattern is lambda:NAME, or lambda:PREFIX* with a non-empty name prefix")
		}
		return pattern{lam: true, fn: name, prefix: prefix}, nil
	case strings.HasPrefix(p, "arn:"):
		rest, ok := cutARN(body)
		re := lambdaNameRE
		if prefix {
			re = lambdaPrefixRE
		}
		if !ok || !re.MatchString(rest) {
			return pattern{}, errors.New("a Lambda ARN pattern is a whole function ARN, or one ending in a non-empty name prefix and *")
		}
		return pattern{lam: true, arn: true, fn: body, prefix: prefix}, nil
	}
	scheme, rest, ok := strings.Cut(p, "://")
	if !ok || (scheme != "http" && scheme != "https") {
		return pattern{}, errors.New("a pattern is http(s)://HOST[:PORT][/PATH][*], lambda:NAME[*] or a Lambda function ARN[*]")
	}
	// Without a path, a pattern allows every path on its host and port.
	authority, path := rest, "/*"
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	if strings.ContainsAny(authority, "@?#") {
		return pattern{}, errors.New("a pattern's host must not carry user info, query or fragment")
	}
	host, port, err := splitHostPort(authority, scheme, true)
	if err != nil {
		return pattern{}, fmt.Errorf("%w (a * may stand for the whole host, a subdomain as in *.example.com, the port, or end the path)", err)
	}
	path, prefix = strings.CutSuffix(path, "*")
	if strings.ContainsAny(path, "*?#") {
		return pattern{}, errors.New("a * may only end the path; a pattern has no query or fragment")
	}
	if _, err := parseHTTPTarget(scheme + "://x" + path); err != nil {
		return pattern{}, err
	}
	return pattern{scheme: scheme, host: host, port: port, path: path, prefix: prefix}, nil
}

func (p pattern) match(t Target) bool {
	if p.lam {
		if t.URL != nil || p.arn != t.ARN {
			return false
		}
		return t.Function == p.fn || p.prefix && strings.HasPrefix(t.Function, p.fn)
	}
	if t.URL == nil || t.URL.Scheme != p.scheme {
		return false
	}
	switch {
	case p.host == "*":
	case strings.HasPrefix(p.host, "*."):
		if _, err := netip.ParseAddr(t.Host); err == nil || !strings.HasSuffix(t.Host, p.host[1:]) {
			return false
		}
	case t.Host != p.host:
		return false
	}
	if p.port != "*" && t.Port != p.port {
		return false
	}
	path := t.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	return path == p.path || p.prefix && strings.HasPrefix(path, p.path)
}

// Address classes HTTP targets may not reach unless a queue's
// allow_networks lists them. Earlier entries win.
var refusedNetworks = []struct {
	prefix netip.Prefix
	class  string
}{
	{netip.MustParsePrefix("169.254.169.254/32"), "metadata"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "metadata"},
	{netip.MustParsePrefix("169.254.170.2/32"), "metadata"},
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (carrier-grade NAT)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved or broadcast"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("fc00::/7"), "unique-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// embeddedIPv4 lists the IPv6 ranges whose addresses carry an IPv4 address,
// and where it lies: at byte at, XORed with xor (Teredo obfuscates its
// client's address). Such an address is judged by its IPv4 address.
var embeddedIPv4 = []struct {
	prefix netip.Prefix
	at     int
	xor    byte
}{
	{netip.MustParsePrefix("::ffff:0:0/96"), 12, 0},   // IPv4-mapped
	{netip.MustParsePrefix("::/96"), 12, 0},           // IPv4-compatible (deprecated), but :: and ::1
	{netip.MustParsePrefix("::ffff:0:0:0/96"), 12, 0}, // IPv4-translated
	{netip.MustParsePrefix("64:ff9b::/96"), 12, 0},    // NAT64
	{netip.MustParsePrefix("64:ff9b:1::/48"), 12, 0},  // local NAT64
	{netip.MustParsePrefix("2002::/16"), 2, 0},        // 6to4
	{netip.MustParsePrefix("2001::/32"), 12, 0xff},    // Teredo (its client)
}

// notCompatible is where the IPv4-compatible range holds IPv6's own
// unspecified (::) and loopback (::1) addresses.
var notCompatible = netip.MustParsePrefix("::/127")

// JudgedAddr returns the address by which a is judged, by AddrClass and
// by a queue's allow_networks (Config.CheckAddr): the IPv4 address an
// IPv6 address carries — IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible
// (::a.b.c.d), IPv4-translated, NAT64, 6to4, Teredo — and otherwise a
// itself, without its zone. The enqueue check and the worker's dial-time
// check both go through it, so they judge every address the same way:
// http://[::ffff:127.0.0.1]/ is loopback, and an IPv6 prefix such as
// "::/0" never allows it.
func JudgedAddr(a netip.Addr) netip.Addr {
	a = a.WithZone("")
	if !a.Is6() || notCompatible.Contains(a) {
		return a
	}
	for _, e := range embeddedIPv4 {
		if e.prefix.Contains(a) {
			b := a.As16()
			return netip.AddrFrom4([4]byte{b[e.at] ^ e.xor, b[e.at+1] ^ e.xor, b[e.at+2] ^ e.xor, b[e.at+3] ^ e.xor})
		}
	}
	return a
}

// carriesIPv4 reports whether every address of p is judged by the IPv4
// address it carries (JudgedAddr), so that p, as an allow_networks
// prefix, could allow nothing.
func carriesIPv4(p netip.Prefix) bool {
	if p.Addr().Is4() || p.Overlaps(notCompatible) {
		return false
	}
	for _, e := range embeddedIPv4 {
		if p.Bits() >= e.prefix.Bits() && e.prefix.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

// AddrClass names the refused class of an address ("loopback", "private",
// "metadata", …), or "" for an address HTTP targets may reach. An IPv6
// address that carries an IPv4 address is judged by it (JudgedAddr).
func AddrClass(a netip.Addr) string {
	if !a.IsValid() {
		return "invalid"
	}
	a = JudgedAddr(a)
	for _, n := range refusedNetworks {
		if n.prefix.Contains(a) {
			return n.class
		}
	}
	return ""
}
