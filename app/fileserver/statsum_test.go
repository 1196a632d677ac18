package fileserver

import (
	"reflect"
	"testing"

	"github.com/turboretry/turboretry/quic"
)

func TestAddStats(t *testing.T) {
	a := quic.TransportStats{Connections: 2, SendBuffered: 10, SendBudgetWaits: 1, Refused: map[string]uint64{"x": 1}}
	b := quic.TransportStats{Connections: 3, SendBuffered: 5, PanicsRecovered: 4, Refused: map[string]uint64{"x": 2, "y": 7}}
	var sum quic.TransportStats
	addStats(&sum, a)
	addStats(&sum, b)
	want := quic.TransportStats{Connections: 5, SendBuffered: 15, SendBudgetWaits: 1, PanicsRecovered: 4, Refused: map[string]uint64{"x": 3, "y": 7}}
	if !reflect.DeepEqual(sum, want) {
		t.Fatalf("sum %+v, want %+v", sum, want)
	}
	// Every exported field of the snapshot is summed: a new counter added
	// to it later cannot be dropped silently.
	var one quic.AddressValidationStats
	fill(reflect.ValueOf(&one).Elem())
	var two quic.AddressValidationStats
	addStats(&two, one)
	addStats(&two, one)
	checkDoubled(t, reflect.ValueOf(one), reflect.ValueOf(two), "AddressValidationStats")
}

// fill sets every integer of v to 1 and gives maps one key.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				fill(v.Field(i))
			}
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e)
		m.SetMapIndex(reflect.New(v.Type().Key()).Elem(), e)
		v.Set(m)
	}
}

func checkDoubled(t *testing.T, one, two reflect.Value, path string) {
	t.Helper()
	switch one.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if two.Int() != 2*one.Int() {
			t.Errorf("%s: %d, want %d", path, two.Int(), 2*one.Int())
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if two.Uint() != 2*one.Uint() {
			t.Errorf("%s: %d, want %d", path, two.Uint(), 2*one.Uint())
		}
	case reflect.Struct:
		for i := range one.NumField() {
			if one.Type().Field(i).IsExported() {
				checkDoubled(t, one.Field(i), two.Field(i), path+"."+one.Type().Field(i).Name)
			}
		}
	case reflect.Map:
		it := one.MapRange()
		for it.Next() {
			checkDoubled(t, it.Value(), two.MapIndex(it.Key()), path+"[key]")
		}
	}
}
