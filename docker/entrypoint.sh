#!/bin/sh
# kafkapy image entry point: server.properties from KAFKA_* variables, then the broker.
#   docker run kafkapy [--override key=value ...]   start the broker (arguments pass through)
#   docker run kafkapy <command> [args]              run that command instead (e.g. bash, kafkapy-topics)
# KAFKAPY_BASE_PROPERTIES: the defaults file (default /etc/kafkapy/base.properties);
# KAFKAPY_PROPERTIES: where the generated file goes (default /etc/kafkapy/server.properties).
set -eu
case "${1:-}" in
  ""|-*) ;;
  *) exec "$@" ;;
esac
base=${KAFKAPY_BASE_PROPERTIES:-/etc/kafkapy/base.properties}
props=${KAFKAPY_PROPERTIES:-/etc/kafkapy/server.properties}
python -m kafkapy.config.from_env --base "$base" --output "$props"
exec kafkapy-server-start "$props" "$@"
