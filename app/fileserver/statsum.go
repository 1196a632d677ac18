package fileserver

import "reflect"

// addStats adds the counters and gauges of src to *dst, field by field:
// integers add, maps of them add per key, nested structs and arrays
// recurse. The workers' Transports each keep their own snapshot structs
// (quic.TransportStats, quic.AddressValidationStats); the server's metrics
// are their sums. A peak (SendBufferedPeak) adds up to an upper bound of
// the server's peak.
func addStats[T any](dst *T, src T) {
	addValue(reflect.ValueOf(dst).Elem(), reflect.ValueOf(src))
}

func addValue(dst, src reflect.Value) {
	switch dst.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		dst.SetInt(dst.Int() + src.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		dst.SetUint(dst.Uint() + src.Uint())
	case reflect.Struct:
		for i := range dst.NumField() {
			if dst.Field(i).CanSet() {
				addValue(dst.Field(i), src.Field(i))
			}
		}
	case reflect.Array:
		for i := range dst.Len() {
			addValue(dst.Index(i), src.Index(i))
		}
	case reflect.Map:
		if src.Len() == 0 {
			return
		}
		if dst.IsNil() {
			dst.Set(reflect.MakeMap(dst.Type()))
		}
		it := src.MapRange()
		for it.Next() {
			sum := reflect.New(dst.Type().Elem()).Elem()
			if cur := dst.MapIndex(it.Key()); cur.IsValid() {
				sum.Set(cur)
			}
			addValue(sum, it.Value())
			dst.SetMapIndex(it.Key(), sum)
		}
	}
}
