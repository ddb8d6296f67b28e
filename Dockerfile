# The action's image, which also holds the bot (cmd/bot, the GitHub App).
# Each build step is a script of hack/ that CI also runs outside Docker, so
# the image is no different from what the tests ran. hack/image.sh builds
# this file as it is, offline, and runs it as GitHub's runner does.
# The build stage runs on the builder's own platform and cross-compiles
# (static binaries, CGO off): an arm64 image is built at native speed, not
# under emulation.
FROM --platform=$BUILDPLATFORM golang:1.26-bookworm AS build
# Set by the builder (BuildKit, buildah) for the image's platform.
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends unzip python3 python3-pip python3-venv && rm -rf /var/lib/apt/lists/*
# Terraform, pinned by version and checksum, for stacks with Terraform
# resources; before the sources, so a code change does not fetch it again.
# TERRAFORM_FILE names a release zip or binary inside the build context to
# use instead of the download, checked against the same checksum (for
# builds with no access to releases.hashicorp.com; see hack/image.sh).
COPY hack/install-terraform.sh /usr/local/bin/install-terraform
ARG TERRAFORM_VERSION=1.11.4
ARG TERRAFORM_SHA256=
ARG TERRAFORM_FILE=
RUN --mount=type=bind,target=/context mkdir -p /out/bin && \
    install-terraform /out/bin "$TERRAFORM_VERSION" "$TERRAFORM_SHA256" "${TERRAFORM_FILE:+/context/$TERRAFORM_FILE}" "$TARGETARCH"
# KCL's runtime (kcl-lib and protobuf, pinned by version and wheel hash in
# hack/kcl/requirements.txt) for the image's architecture, as an
# environment of the run stage's Python: main.k stacks compile with it.
COPY hack/kcl.sh hack/steps.sh /src/hack/
COPY hack/kcl/requirements.txt /src/hack/kcl/
RUN hack/kcl.sh into /out/kcl "$TARGETARCH"
# Modules and compiled packages live in cache mounts: a rebuild after a code
# change compiles what changed, not everything.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH hack/build-action.sh /out/action /out/bot

# Run: static binaries and Python 3.11 with KCL's runtime; no shell, no
# package manager. No USER: GitHub
# runs a docker action as the image's user and mounts the workspace and the
# files the action writes its outputs and summary to owned by the runner's
# user (uid 1001), which only root can write; the bot runs as a non-root
# user set where it is deployed (deploy/kubernetes/bot.yaml's
# securityContext). No WORKDIR either: the runner sets the working directory
# to the mounted workspace.
FROM gcr.io/distroless/python3-debian12
COPY --from=build /out/action /out/bot /out/bin/terraform /usr/local/bin/
COPY --from=build /out/kcl /opt/kcl
ENV CHECKPOINT_DISABLE=1 KUSIONPR_KCL_RUNTIME=/opt/kcl
# The entrypoint is the action. The bot is run by naming its binary as the
# command, as deploy/kubernetes/bot.yaml does: command: ["/usr/local/bin/bot"]
# (docker run --entrypoint /usr/local/bin/bot ...).
ENTRYPOINT ["/usr/local/bin/action"]
