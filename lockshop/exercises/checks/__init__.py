"""The grader's checks: the contract every lock keeps, the lessons of each backend, and
the sale across shop instances that judges them all by the audit."""
