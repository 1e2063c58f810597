package apischema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/invopop/jsonschema"

	"github.com/slotq/slotq/internal/engine"
	"github.com/slotq/slotq/internal/lambdafn/admin"
	"github.com/slotq/slotq/internal/slot"
	"github.com/slotq/slotq/pkg/api"
)

// BaseID is where the schemas are published: each file's $id is BaseID
// and its name.
const BaseID = "https://raw.githubusercontent.com/slotq/slotq/main/docs/schema/"

// The schema files, by what they describe.
const (
	EnqueueRequest  = "enqueue-request.schema.json"
	EnqueueResponse = "enqueue-response.schema.json"
	AdminRequest    = "admin-request.schema.json"
	AdminResponse   = "admin-response.schema.json"
	Job             = "job.schema.json"
	Error           = "error.schema.json"
)

// roots are the wire types each file describes, with its title.
var roots = []struct {
	file, title string
	t           reflect.Type
}{
	{EnqueueRequest, "slotq enqueue request", reflect.TypeFor[api.EnqueueRequest]()},
	{EnqueueResponse, "slotq enqueue answer", reflect.TypeFor[api.EnqueueResponse]()},
	{AdminRequest, "slotq admin request", reflect.TypeFor[api.AdminRequest]()},
	{AdminResponse, "slotq admin answer", reflect.TypeFor[api.AdminResponse]()},
	{Job, "slotq job record", reflect.TypeFor[api.Job]()},
	{Error, "slotq error", reflect.TypeFor[api.Error]()},
}

// The patterns of the values the functions check by their form. Each is
// both an ECMA 262 and an RE2 regular expression, as JSON Schema asks.
const (
	// durationPattern is a Go duration with its unit ("500ms", "1h30m");
	// a bare number, and a negative duration, are refused.
	durationPattern = `^[+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`
	// ratePattern is N/PERIOD ("100/1m", "500/s").
	ratePattern = `^\s*[0-9]+\s*/\s*(ms|s|m|h|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)\s*$`
	// timePattern is an RFC 3339 date and time with its offset.
	timePattern        = `^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})$`
	idPattern          = `^[A-Za-z0-9_.:-]{1,128}$`
	kindPattern        = `^[A-Za-z0-9_.:/-]{1,128}$`
	keyPattern         = `^[A-Za-z0-9_.:/@-]{1,200}$`
	byPattern          = `^[A-Za-z0-9_.:/@+-]{1,64}$`
	scheduleName       = `^[A-Za-z0-9_.-]{1,80}$`
	traceParentPattern = `^(00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}|([0-9a-e][0-9a-f]|f[0-9a-e])-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-.*)?)$`
	codePattern        = `^[a-z][a-z0-9_]*$`
)

// configWire and limitWire are api.Config (and api.ConfigUpdate) and
// api.Limit on the wire, which their MarshalJSON writes: TestConfigWire
// holds them to it. configWire is api.ConfigUpdate with durations as
// api.Duration, as pkg/api writes it.
var configWire = func() reflect.Type {
	t := reflect.TypeFor[api.ConfigUpdate]()
	fields := make([]reflect.StructField, t.NumField())
	for i := range fields {
		f := t.Field(i)
		if f.Type == reflect.TypeFor[*time.Duration]() {
			f.Type = reflect.TypeFor[*api.Duration]()
		}
		fields[i] = reflect.StructField{Name: f.Name, Type: f.Type, Tag: f.Tag}
	}
	return reflect.StructOf(fields)
}()

type limitWire struct {
	Interval *api.Duration `json:"interval,omitempty"`
	Rate     *api.Rate     `json:"rate,omitempty"`
	Burst    *int          `json:"burst,omitempty"`
	Window   *api.Rate     `json:"window,omitempty"`
}

// wireNames names the mirrors as the types they stand for.
var wireNames = map[reflect.Type]string{
	configWire:                   "Config",
	reflect.TypeFor[limitWire](): "Limit",
}

// generator reflects pkg/api's types; structs records each struct type
// reflected by its definition's name, for the passes that add what
// reflection cannot see.
type generator struct {
	comments map[string]string
	structs  map[string]reflect.Type
}

// Generate returns each schema file's content by its name. apiDir is
// pkg/api's folder, whose doc comments become the descriptions.
func Generate(apiDir string) (map[string][]byte, error) {
	comments, err := readComments(apiDir)
	if err != nil {
		return nil, err
	}
	g := &generator{comments: comments, structs: map[string]reflect.Type{}}
	files := map[string][]byte{}
	for _, root := range roots {
		s := g.reflect(root.t)
		s.Version = jsonschema.Version
		s.ID = jsonschema.ID(BaseID + root.file)
		s.Title = root.title
		if s.Definitions == nil {
			s.Definitions = jsonschema.Definitions{}
		}
		// The mirrors' definitions go where the schema refers to them,
		// and again until none is missing (Config refers to Limit).
		for {
			added := false
			b, _ := json.Marshal(s)
			for t, name := range wireNames {
				if _, ok := s.Definitions[name]; !ok && bytes.Contains(b, []byte(`"#/$defs/`+name+`"`)) {
					s.Definitions[name] = g.reflect(t)
					added = true
				}
			}
			if !added {
				break
			}
		}
		g.fields(nameOf(root.t), s)
		for name, def := range s.Definitions {
			g.fields(name, def)
		}
		bounds(s, nameOf(root.t))
		b, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", root.file, err)
		}
		files[root.file] = append(b, '\n')
	}
	return files, nil
}

// reflect is t's schema: the root's own type inline, the types it uses
// under $defs.
func (g *generator) reflect(t reflect.Type) *jsonschema.Schema {
	r := &jsonschema.Reflector{
		ExpandedStruct:             true,
		RequiredFromJSONSchemaTags: true, // fields() says what is required
		Mapper:                     g.mapType,
		Namer: func(t reflect.Type) string {
			if n, ok := wireNames[t]; ok {
				return n
			}
			return t.Name()
		},
		LookupComment: g.comment,
	}
	s := r.ReflectFromType(t)
	s.Version, s.ID = "", ""
	g.structs[nameOf(t)] = t
	s.Definitions = withoutRoot(s.Definitions, nameOf(t))
	return s
}

func nameOf(t reflect.Type) string {
	if n, ok := wireNames[t]; ok {
		return n
	}
	return t.Name()
}

func withoutRoot(d jsonschema.Definitions, name string) jsonschema.Definitions {
	delete(d, name)
	if len(d) == 0 {
		return nil
	}
	return d
}

// mapType gives the types that travel as strings their form, and
// records the structs reflection will define.
func (g *generator) mapType(t reflect.Type) *jsonschema.Schema {
	str := func(pattern, desc string) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "string", Pattern: pattern, Description: desc}
	}
	enum := func(vals ...string) *jsonschema.Schema {
		s := &jsonschema.Schema{Type: "string"}
		for _, v := range vals {
			s.Enum = append(s.Enum, v)
		}
		return s
	}
	switch t {
	case reflect.TypeFor[api.Duration]():
		return str(durationPattern, "")
	case reflect.TypeFor[api.Rate]():
		return str(ratePattern, "")
	case reflect.TypeFor[api.Config](), reflect.TypeFor[api.ConfigUpdate]():
		return &jsonschema.Schema{Ref: "#/$defs/Config"}
	case reflect.TypeFor[api.Limit]():
		return &jsonschema.Schema{Ref: "#/$defs/Limit"}
	case reflect.TypeFor[time.Time]():
		return &jsonschema.Schema{Type: "string", Format: "date-time", Pattern: timePattern}
	case reflect.TypeFor[json.RawMessage]():
		return &jsonschema.Schema{}
	case reflect.TypeFor[api.Status]():
		var vals []string
		for _, s := range api.Statuses {
			vals = append(vals, string(s))
		}
		// An enqueue answer's status of a job accepted into the
		// waiting room (its record is parked, waiting_room).
		vals = append(vals, string(api.StatusWaiting))
		// An enqueue answer's status of a job that joined a waiting job
		// of its debounce key (no record has it).
		vals = append(vals, string(api.StatusDebounced))
		return enum(vals...)
	case reflect.TypeFor[api.ParkReason]():
		return enum(string(api.Far), string(api.PausedQueue), string(api.Unsent), string(api.WaitKey), string(api.WaitPlace), string(api.WaitGate), string(api.Room))
	case reflect.TypeFor[api.EventKind]():
		return enum(string(api.Enqueued), string(api.ParkedEvent), string(api.Released), string(api.Reticketed),
			string(api.SlotMissed), string(api.HandedBack), string(api.Started), string(api.AttemptFailed),
			string(api.Retried), string(api.Rerun), string(api.SucceededEvent), string(api.FailedEvent),
			string(api.CancelledEvent), string(api.SlowedDown), string(api.BookedEvent))
	}
	if t.Kind() == reflect.Struct {
		g.structs[nameOf(t)] = t
	}
	return nil
}

// comment is the doc comment of t (field "") or its field, from pkg/api's
// source; the mirrors take the comments of the types they stand for.
func (g *generator) comment(t reflect.Type, field string) string {
	name := nameOf(t)
	if field == "" {
		return g.comments[name]
	}
	if c, ok := g.comments[name+"."+field]; ok {
		return c
	}
	// A comment on a group of fields ("Kind names a Go handler; Target
	// an HTTP(S) URL") sits on its first field and names the others.
	if t.Kind() != reflect.Struct {
		return ""
	}
	for i := range t.NumField() {
		if t.Field(i).Name != field {
			continue
		}
		for j := i - 1; j >= 0; j-- {
			if c, ok := g.comments[name+"."+t.Field(j).Name]; ok {
				if wordRE(field).MatchString(c) {
					return c
				}
				return ""
			}
		}
	}
	return ""
}

func wordRE(w string) *regexp.Regexp { return regexp.MustCompile(`\b` + regexp.QuoteMeta(w) + `\b`) }

// readComments reads pkg/api's doc comments by "Type" and "Type.Field".
func readComments(apiDir string) (map[string]string, error) {
	r := &jsonschema.Reflector{}
	const base = "api"
	if err := r.AddGoComments(base, apiDir, jsonschema.WithFullComment()); err != nil {
		return nil, fmt.Errorf("read comments of %s: %w", apiDir, err)
	}
	prefix := path.Join(base, apiDir) + "."
	out := map[string]string{}
	for k, v := range r.CommentMap {
		if name, ok := strings.CutPrefix(k, prefix); ok {
			out[name] = unwrap(v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no doc comments in %s", apiDir)
	}
	return out, nil
}

// unwrap joins a comment's lines into paragraphs.
func unwrap(s string) string {
	paras := strings.Split(strings.TrimSpace(s), "\n\n")
	for i, p := range paras {
		paras[i] = strings.Join(strings.Fields(p), " ")
	}
	return strings.Join(paras, "\n\n")
}

// fields marks def's required properties (those its Go type always
// writes: no omitempty or omitzero) and lets the pointers and lists take
// null, which the functions read as absent.
func (g *generator) fields(name string, def *jsonschema.Schema) {
	t, ok := g.structs[name]
	if !ok || def.Properties == nil {
		return
	}
	def.Required = nil
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || tag == "-" || tag == "" {
			continue
		}
		p, ok := def.Properties.Get(tag)
		if !ok {
			continue
		}
		if !slices.ContainsFunc(strings.Split(opts, ","), func(o string) bool { return o == "omitempty" || o == "omitzero" }) {
			def.Required = append(def.Required, tag)
		}
		if k := f.Type.Kind(); (k == reflect.Pointer || k == reflect.Slice) && f.Type != reflect.TypeFor[json.RawMessage]() {
			desc := p.Description
			p.Description = ""
			def.Properties.Set(tag, &jsonschema.Schema{AnyOf: []*jsonschema.Schema{p, {Type: "null"}}, Description: desc})
		}
	}
}

// prop is property name of s, under the null alternative fields() adds.
func prop(s *jsonschema.Schema, name string) *jsonschema.Schema {
	if s == nil || s.Properties == nil {
		panic(fmt.Sprintf("no properties for %q", name))
	}
	p, ok := s.Properties.Get(name)
	if !ok {
		panic(fmt.Sprintf("no property %q", name))
	}
	if len(p.AnyOf) == 2 && p.AnyOf[1].Type == "null" {
		return p.AnyOf[0]
	}
	return p
}

func u64(n int) *uint64 { v := uint64(n); return &v }

func num(n int) json.Number { return json.Number(strconv.Itoa(n)) }

func required(names ...string) *jsonschema.Schema { return &jsonschema.Schema{Required: names} }

// isObject matches an instance whose property name holds an object: a
// job given as null is absent.
func isObject(name string) *jsonschema.Schema {
	props := jsonschema.NewProperties()
	props.Set(name, &jsonschema.Schema{Type: "object"})
	return &jsonschema.Schema{Required: []string{name}, Properties: props}
}

// given matches an instance that gives property name a value other
// than null (which the functions read as absent).
func given(name string) *jsonschema.Schema {
	props := jsonschema.NewProperties()
	props.Set(name, &jsonschema.Schema{Not: &jsonschema.Schema{Type: "null"}})
	return &jsonschema.Schema{Required: []string{name}, Properties: props}
}

// nulls is a schema that refuses a value other than null for the
// properties names: its error names the property's path.
func nulls(names ...string) *jsonschema.Schema {
	props := jsonschema.NewProperties()
	for _, n := range names {
		props.Set(n, &jsonschema.Schema{Type: "null"})
	}
	return &jsonschema.Schema{Properties: props}
}

// forbid is a schema that refuses the properties names: its error names
// the property's path.
func forbid(names ...string) *jsonschema.Schema {
	props := jsonschema.NewProperties()
	for _, n := range names {
		props.Set(n, jsonschema.FalseSchema)
	}
	return &jsonschema.Schema{Properties: props}
}

// bounds adds, to each definition and to the root (of type name), what
// the functions check beyond the types: patterns, ranges, list lengths,
// the forms a value takes and each admin op's fields.
func bounds(root *jsonschema.Schema, name string) {
	if f, ok := boundsOf[name]; ok {
		f(root)
	}
	for name, d := range root.Definitions {
		if f, ok := boundsOf[name]; ok {
			f(d)
		}
	}
}

// boundsOf adds the functions' checks to the definition of each type.
var boundsOf = map[string]func(s *jsonschema.Schema){
	"EnqueueRequest": func(s *jsonschema.Schema) {
		prop(s, "queue").Pattern = api.QueueNamePattern
		jobs := prop(s, "jobs")
		jobs.MinItems, jobs.MaxItems = u64(1), u64(api.MaxBatch)
		// One job or a list of jobs: not both, not neither.
		arr := jsonschema.NewProperties()
		arr.Set("jobs", &jsonschema.Schema{Type: "array"})
		s.AnyOf = []*jsonschema.Schema{isObject("job"), {Required: []string{"jobs"}, Properties: arr}}
		s.If, s.Then = isObject("job"), forbid("jobs")
		// The limit of a queue the call creates takes one form; burst
		// goes with a rate. Each refusal names the field the function
		// names.
		b := prop(s, "burst")
		b.Minimum, b.Maximum = num(0), num(slot.MaxBurst)
		s.AllOf = []*jsonschema.Schema{
			{If: &jsonschema.Schema{AnyOf: []*jsonschema.Schema{given("interval"), given("rate")}}, Then: nulls("window")},
			{If: given("interval"), Then: nulls("rate")},
			{If: &jsonschema.Schema{Not: given("rate")}, Then: nulls("burst")},
		}
	},
	"Spec": func(s *jsonschema.Schema) {
		prop(s, "id").Pattern = idPattern
		jobShape(s)
		tp := prop(s, "traceparent")
		tp.Pattern, tp.MaxLength = traceParentPattern, u64(128)
		prop(s, "tracestate").MaxLength = u64(512)
		// 0 is the default, as a job that leaves it out (api.Spec.Priority:
		// a Go caller cannot tell the two apart, and the wire takes both).
		p := prop(s, "priority")
		p.Minimum, p.Maximum = num(0), num(api.MaxPriority)
		// debounce_key and debounce go together, and a debounced job
		// takes no not_before (api.Spec.Debounce).
		prop(s, "debounce_key").Pattern = keyPattern
		s.AllOf = append(s.AllOf,
			&jsonschema.Schema{If: given("debounce_key"), Then: given("debounce")},
			&jsonschema.Schema{If: given("debounce"), Then: given("debounce_key")},
			&jsonschema.Schema{If: given("debounce"), Then: nulls("not_before")})
	},
	"ScheduleJob": jobShape,
	"ScheduleSpec": func(s *jsonschema.Schema) {
		missed := prop(s, "missed")
		missed.Enum = []any{api.MissedNone, api.MissedLatest, api.MissedAll}
		// Every or cron, not both; tz goes with cron.
		s.AnyOf = []*jsonschema.Schema{required("every"), required("cron")}
		s.If, s.Then = required("every"), forbid("cron", "tz")
	},
	"KeyLimit": func(s *jsonschema.Schema) {
		prop(s, "key").Pattern = keyPattern
		prop(s, "limits").MinItems = u64(1)
		prop(s, "limits").MaxItems = u64(slot.MaxLimits)
		w := prop(s, "weight")
		w.Minimum, w.Maximum = num(1), num(api.MaxWeight)
		// Limits (a list, or null to clear them), or a weight alone.
		s.Required = []string{"key"}
		s.AnyOf = []*jsonschema.Schema{required("limits"), required("weight")}
	},
	"Config": func(s *jsonschema.Schema) {
		// Each setting's range (slot.Settings): a number's least and
		// most, a list's most items.
		for _, st := range slot.Settings {
			switch {
			case st.Max == 0:
			case st.IsCount():
				p := prop(s, st.Name)
				p.Minimum, p.Maximum = num(int(st.WireMin())), num(int(st.Max))
			case st.IsList():
				prop(s, st.Name).MaxItems = u64(int(st.Max))
			}
		}
	},
	"Limit": func(s *jsonschema.Schema) {
		p := prop(s, "burst")
		p.Minimum, p.Maximum = num(0), num(slot.MaxBurst)
		// Exactly one form; burst only with a rate.
		s.OneOf = []*jsonschema.Schema{required("interval"), required("rate"), required("window")}
		s.If, s.Then = &jsonschema.Schema{Not: required("rate")}, forbid("burst")
	},
	"AdminRequest": adminBounds,
	"Error": func(s *jsonschema.Schema) {
		prop(s, "code").Pattern = codePattern
	},
}

// jobShape is a job's kind, target and key: exactly one of kind and
// target.
func jobShape(s *jsonschema.Schema) {
	prop(s, "kind").Pattern = kindPattern
	prop(s, "target").MinLength = u64(1)
	prop(s, "key").Pattern = keyPattern
	s.AnyOf = []*jsonschema.Schema{required("kind"), required("target")}
	s.If, s.Then = required("kind"), forbid("target")
}

// opRequires lists, by op, the fields besides queue it cannot go
// without.
var opRequires = map[string][]string{
	api.OpConfigure: {"config"}, api.OpGet: {"job_id"}, api.OpCancel: {"job_id"},
	api.OpGetKey: {"key"}, api.OpSetKeyLimits: {"keys"},
	api.OpCreateSchedule: {"name", "schedule"}, api.OpGetSchedule: {"name"},
	api.OpPauseSchedule: {"name"}, api.OpResumeSchedule: {"name"}, api.OpDeleteSchedule: {"name"},
}

// adminBounds gives each op the fields it reads (admin.OpFields): any
// other is refused, as the function refuses it (unused_field), and the
// ops on a queue require one.
func adminBounds(s *jsonschema.Schema) {
	ops := admin.Ops
	op := prop(s, "op")
	for _, o := range ops {
		op.Enum = append(op.Enum, o)
	}
	prop(s, "queue").Pattern = api.QueueNamePattern
	prop(s, "job_id").Pattern = idPattern
	ids := prop(s, "job_ids")
	ids.Items.Pattern, ids.MaxItems = idPattern, u64(engine.MaxRetryIDs)
	prop(s, "by").Pattern = byPattern
	prop(s, "name").Pattern = scheduleName
	prop(s, "key").Pattern = keyPattern
	keys := prop(s, "keys")
	keys.MinItems, keys.MaxItems = u64(1), u64(api.MaxKeyOverrides)
	for _, n := range []string{"after", "up_to", "limit"} {
		prop(s, n).Minimum = num(0)
	}
	// The most a limit asks for, by op.
	maxLimit := map[string]int{
		api.OpStarts: admin.MaxStartsLimit, api.OpList: engine.MaxList,
		api.OpRedrive: engine.MaxRedrive, api.OpRetry: engine.MaxRetryPage,
	}
	for _, o := range ops {
		fields := admin.OpFields[o]
		props := jsonschema.NewProperties()
		props.Set("op", jsonschema.TrueSchema)
		var req []string
		for _, f := range fields {
			switch {
			case o == api.OpRetry && f == "job_id", o == api.OpRedrive && f == "queue": // read only to refuse them
				continue
			case f == "limit":
				props.Set(f, &jsonschema.Schema{Maximum: num(maxLimit[o])})
			case o == api.OpList && f == "status":
				props.Set(f, &jsonschema.Schema{Enum: []any{string(api.Parked), string(api.Failed)}})
			default:
				props.Set(f, jsonschema.TrueSchema)
			}
			if f == "queue" && o != api.OpList || slices.Contains(opRequires[o], f) {
				req = append(req, f)
			}
		}
		cond := jsonschema.NewProperties()
		cond.Set("op", &jsonschema.Schema{Const: o})
		s.AllOf = append(s.AllOf, &jsonschema.Schema{
			If:   &jsonschema.Schema{Properties: cond, Required: []string{"op"}},
			Then: &jsonschema.Schema{Properties: props, AdditionalProperties: jsonschema.FalseSchema, Required: req},
		})
	}
}
