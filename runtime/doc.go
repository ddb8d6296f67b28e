// Package runtime holds the runtimes that read and change real objects for the
// engine: kubernetes/ (client-go, server-side apply) and terraform/
// (terraform-exec). Each matches engine.Runtime's method set without importing
// the engine, and knows nothing of the engine's operations; the drivers in
// runtimes/ declare what the engine may count on each for (engine.Capabilities).
package runtime
