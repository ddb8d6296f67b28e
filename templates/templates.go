// Package templates holds the text of every comment and report, embedded in
// the binaries so the action and the bot render the same output.
package templates

import "embed"

// FS holds the *.tmpl files of this folder.
//
//go:embed *.tmpl
var FS embed.FS
