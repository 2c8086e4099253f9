# The Splash Fabric image: the static splash binary and nothing else.
#
# The engine this builds on has no registry to pull base images from, so
# the binary is built outside (CGO_ENABLED=0, by scripts/build-image.sh into
# .build/image/) and copied into an empty image. Build with:
#
#     scripts/build-image.sh            # tags splash:dev
#
# One image serves every role; the command picks it:
#
#     docker run splash:dev nats --cluster-name c --cluster-port 6222 ...
#     docker run splash:dev host --nats-url nats://nats-1:4222 ...
#     docker run splash:dev worker --tools echo,upper ...
FROM scratch

COPY .build/image/splash /splash

# A writable directory for the JetStream store and other state, owned by the
# unprivileged user below; scratch has no /tmp, so nothing may rely on it.
# It is not declared a VOLUME: a deployment mounts a named volume here when
# the data must outlive the container, and no anonymous volumes pile up.
COPY --chown=65532:65532 .build/image/data /data

# No /etc/passwd in scratch: a numeric id needs none.
USER 65532:65532

# Inside a container the loopback interface is unreachable from the other
# services, so the NATS node listens on all interfaces and stores its data
# in the volume-friendly directory. The host API stays on loopback unless
# the deployment sets SPLASH_API_ADDR, keeping its exposure a choice. These
# count as given flags, so they override the same settings in a --config
# file; set one empty (an empty variable counts as unset) to keep the file's.
ENV SPLASH_NATS_HOST=0.0.0.0 \
    SPLASH_NATS_STORE_DIR=/data/nats \
    SPLASH_DATA_DIR=/data

# NATS clients, cluster routes and monitoring; the host API; worker metrics.
EXPOSE 4222 6222 8222 8080 9464

# No shell or curl here: the binary checks itself. The default URL is the
# host API's /healthz; other roles point SPLASH_HEALTHCHECK_URL (or the
# compose healthcheck's --url) at their own endpoint.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["/splash", "healthcheck"]

ENTRYPOINT ["/splash"]
CMD ["--help"]
