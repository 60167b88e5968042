# syntax=docker/dockerfile:1
#
# flightd in a container: a static binary (CGO_ENABLED=0; its SQLite driver
# is modernc.org/sqlite, pure Go) on a distroless base, run as a non-root
# user (uid 65532), the warehouse in the volume /warehouse.
#
#   make image        # docker build -t sluice-flightd:$(cat VERSION) .
#
# flightd serves without authentication only on a loopback address, and a
# container's loopback is its own: the image listens on 0.0.0.0:8815 and so
# refuses to start until an auth mode is chosen (or --listen names a
# loopback address under --network host). README.md, "The container image",
# has the run commands.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY . .
# make static: the same flags as outside Docker (the version from VERSION).
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    make static BIN=/out && mkdir /out/warehouse

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/flightd-static /usr/local/bin/flightd
COPY --from=build --chown=65532:65532 /out/warehouse /warehouse
USER 65532:65532
ENV SLUICE_LISTEN=0.0.0.0:8815 \
    SLUICE_WAREHOUSE=/warehouse
VOLUME ["/warehouse"]
EXPOSE 8815
ENTRYPOINT ["/usr/local/bin/flightd"]
