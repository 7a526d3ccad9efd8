# syntax=docker/dockerfile:1
# The pet store service's container image (docs/kubernetes.md):
#
#   docker build -t petstore .
#   docker run -p 8080:8080 --stop-timeout 40 -v petstore-data:/var/lib/petstore \
#     -e PETSTORE_BOOTSTRAP_ADMIN_KEY="$KEY" petstore     # KEY: 32 or more random characters
#
# The release binary is built with the toolchain of Cargo.toml's rust-version, on the Debian
# release whose C library the runtime image carries (13, trixie). SQLite, libpq and OpenSSL are
# compiled into it, so it needs only glibc and libgcc at run time: distroless's `cc` image,
# which has no shell and no package manager. .ci/deploy-check lints this file and runs its
# start command with the same user, paths and environment.

FROM rust:1.95-trixie AS build
WORKDIR /src
# .dockerignore sends only what the build reads: Cargo.toml, Cargo.lock, .cargo/ (the
# bundled SQLite's flags), crates/ and migrations/ (compiled in), and the config file below.
COPY . .
# The crates and the build folder are cached between builds; the binary is copied out of
# the cache in the same step. The data folder is made here, where there is a shell: the
# runtime image has none.
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --release --locked -p petstore-http --bin petstore \
    && install -D -m 0755 target/release/petstore /out/petstore \
    && install -d -m 0700 -o 65532 -g 65532 /out/data

FROM gcr.io/distroless/cc-debian13:nonroot
LABEL org.opencontainers.image.title="petstore" \
      org.opencontainers.image.description="A pet store service: a JSON HTTP API under /v1" \
      org.opencontainers.image.licenses="MIT OR Apache-2.0" \
      org.opencontainers.image.source="https://github.com/petstore-rs/petstore"
COPY --from=build /out/petstore /usr/local/bin/petstore
# The settings: every flag of `petstore serve` without its dashes. Kubernetes mounts its
# ConfigMap over /etc/petstore; a PETSTORE_* variable wins over the file.
COPY docs/deploy/container.toml /etc/petstore/petstore.toml
# The SQLite database (and the admin key a first start writes beside it) live here, owned by
# the image's user, mode 0700; on PostgreSQL it holds at most that key file.
COPY --from=build --chown=65532:65532 --chmod=0700 /out/data /var/lib/petstore
VOLUME ["/var/lib/petstore"]
# distroless's `nonroot` user, by number, so that Kubernetes' runAsNonRoot can check it.
USER 65532:65532
# Other commands find the same database by default: `petstore.db` in the working folder.
WORKDIR /var/lib/petstore
ENV PETSTORE_CONFIG=/etc/petstore/petstore.toml
EXPOSE 8080
# Not ready at once, keeps accepting for --drain-delay-secs, finishes in-flight requests for up
# to --shutdown-timeout-secs, exits 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/petstore"]
CMD ["serve"]
