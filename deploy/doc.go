// Package deploy holds no code: it is the folder of what deploys the bot,
// the GitHub App manifest (github-app-manifest.json) and the Kubernetes
// manifests (kubernetes/bot.yaml), and of the tests that check them against
// GitHub's manifest format, a real API server and the settings bot.LoadConfig
// reads.
package deploy
