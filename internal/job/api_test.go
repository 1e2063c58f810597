package job

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/slotq/slotq/pkg/api"
)

// TestAPI checks that API copies every field: a job with each field set
// reads the same in JSON as its wire form.
func TestAPI(t *testing.T) {
	var j Job
	v := reflect.ValueOf(&j).Elem()
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Interface().(type) {
		case time.Time:
			f.Set(reflect.ValueOf(at.Add(time.Duration(i) * time.Second)))
		case json.RawMessage:
			f.Set(reflect.ValueOf(json.RawMessage(`{"n":` + string(rune('0'+i%10)) + `}`)))
		case []Event:
			f.Set(reflect.ValueOf([]Event{{At: at, Kind: Started, Attempt: 1, LatenessMs: 3}}))
		case *api.RoomPlace:
			f.Set(reflect.ValueOf(&api.RoomPlace{Place: 3, Key: "k", Priority: 2, EstimatedStartAt: at}))
		default:
			switch f.Kind() {
			case reflect.String:
				f.SetString("s" + v.Type().Field(i).Name)
			case reflect.Int, reflect.Int64:
				f.SetInt(int64(i + 1))
			case reflect.Bool:
				f.SetBool(true)
			default:
				t.Fatalf("field %s of kind %s: teach TestAPI to set it", v.Type().Field(i).Name, f.Kind())
			}
		}
	}
	want, _ := json.Marshal(&j)
	got, _ := json.Marshal(j.API())
	var w, g map[string]any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("API() JSON:\n got  %s\n want %s", got, want)
	}
}
