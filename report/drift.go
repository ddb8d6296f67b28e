package report

import "github.com/kusionpr/kusionpr/engine"

// DriftLine is one drifted field as a preview's drift block shows it
// ("! path: from => to"), a value past 300 characters cut, for reports
// that list drift outside a preview (a drift issue). Its fingerprints are
// the caller's to mask (model.MaskFingerprints), as Render does.
func DriftLine(c engine.FieldChange) string { return "! " + textChange(c) }
