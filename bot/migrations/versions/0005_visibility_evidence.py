"""Visibility evidence: ``repositories.private_at`` (when the newest delivery that reported the
recorded ``private`` was received) and ``repositories.publicized_at`` (when the newest
``repository`` ``publicized`` delivery that made it public was received), so an old delivery
processed late (a retry, the sweep, GitHub's Redeliver) never makes a private repository public
again (security review N5; ``bot.app.core.access.next_visibility``).

Revision ID: 0005_visibility_evidence
Revises: 0004_steps
Create Date: 2026-12-02 10:00:00
"""

from __future__ import annotations

from alembic import op
import sqlalchemy as sa

revision = '0005_visibility_evidence'
down_revision = '0004_steps'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('repositories', schema=None) as batch_op:
        batch_op.add_column(sa.Column('private_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('publicized_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('repositories', schema=None) as batch_op:
        batch_op.drop_column('publicized_at')
        batch_op.drop_column('private_at')
