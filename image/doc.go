// Package image holds the tests of the action's container image: the image
// hack/image.sh builds from the Dockerfile as committed, run the way GitHub's
// runner runs a docker action (image_test.go), and the bot started from the
// same image. There is no code here; `make test` builds the image first.
package image
