"""History in commit order: ``benchmark_points.committed_at``, the measured commit's committer
date where the result recorded it (``head.committed_at``); a series is ordered by it, else by
``measured_at``.

Revision ID: 0009_commit_order
Revises: 0008_regressions
Create Date: 2026-12-07 02:00:00
"""

from __future__ import annotations

from alembic import op
import sqlalchemy as sa

revision = '0009_commit_order'
down_revision = '0008_regressions'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('benchmark_points', schema=None) as batch_op:
        batch_op.add_column(sa.Column('committed_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('benchmark_points', schema=None) as batch_op:
        batch_op.drop_column('committed_at')
