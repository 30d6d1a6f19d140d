"""The transaction coordinator: state machine (``state``), ``__transaction_state``
records (``records``), the coordinator (``coordinator``), markers (``markers``) and
its wiring into the broker (``service``)."""
