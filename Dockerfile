# Build: a static binary; each step is a plain command CI also runs outside Docker.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/action ./cmd/action

# Run: no shell, no package manager, not root.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/action /usr/local/bin/action
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/action"]
