# The action's image, which also holds the bot (cmd/bot, the GitHub App).
# Each build step is a script of hack/ that CI also runs outside Docker, so
# the image is no different from what the tests ran.
FROM golang:1.26-bookworm AS build
WORKDIR /src
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends unzip && rm -rf /var/lib/apt/lists/*
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN hack/build-action.sh /out/action /out/bot
# Terraform, pinned by version and checksum, for stacks with Terraform resources.
ARG TERRAFORM_VERSION=1.11.4
ARG TERRAFORM_SHA256=
RUN mkdir -p /out/bin && hack/install-terraform.sh /out/bin "$TERRAFORM_VERSION" "$TERRAFORM_SHA256"

# Run: static binaries only; no shell, no package manager, not root.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/action /usr/local/bin/action
COPY --from=build /out/bot /usr/local/bin/bot
COPY --from=build /out/bin/terraform /usr/local/bin/terraform
ENV CHECKPOINT_DISABLE=1
USER nonroot:nonroot
# The entrypoint is the action. The bot is run by naming its binary as the
# command, as deploy/kubernetes/bot.yaml does: command: ["/usr/local/bin/bot"]
# (docker run --entrypoint /usr/local/bin/bot ...).
ENTRYPOINT ["/usr/local/bin/action"]
