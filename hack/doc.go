// Package hack holds the tests of the scripts in this folder (testenv.sh,
// steps.sh and the scripts that source it); its subfolders are the Go
// tools make runs.
package hack
