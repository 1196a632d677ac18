package tlskdf

// Helpers that only this package's tests use: the key schedules keep an
// ExpanderSHA256 per secret instead.

// ExpandLabelSHA256 fills out with HKDF-Expand-Label(secret, label,
// context, len(out)) with SHA-256, without allocating; see
// ExpanderSHA256.ExpandLabel for the errors. To derive several labels from
// one secret an ExpanderSHA256 is cheaper.
func ExpandLabelSHA256(out, secret []byte, label string, context []byte) error {
	var e ExpanderSHA256
	if err := e.Init(secret); err != nil {
		return err
	}
	return e.ExpandLabel(out, label, context)
}
