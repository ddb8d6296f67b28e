// Package deploy holds no code: it is the folder of what deploys the bot and
// reaches the clusters, the GitHub App manifest (github-app-manifest.json)
// and the Kubernetes manifests (kubernetes/: the bot, its Jobs, its
// webhook's Ingress, a patch for the files it reads, and the users of the
// action's and the bot's kubeconfigs), and of the tests that check them
// against GitHub's manifest format, a real API server, the bot's settings
// (as package settings declares them) and what release.yml pushes, and
// hold the README and docs/ to them.
package deploy
