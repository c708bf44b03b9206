"""Regressions: each run's runner group (``app_runs.runner``, its labels ``runs_on`` and the key
``group_key`` its request's runs share: one run per GPU model) and ``app_regressions``, the
regressions on the default branch the App bisects, tracks in an issue and reports once.

Revision ID: 0008_regressions
Revises: 0007_measures
Create Date: 2026-12-02 12:00:00
"""

from __future__ import annotations

from alembic import op
import sqlalchemy as sa

revision = '0008_regressions'
down_revision = '0007_measures'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('app_runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('runner', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('runs_on', sa.String(length=1100), nullable=True))
        batch_op.add_column(sa.Column('group_key', sa.String(length=40), nullable=True))
        batch_op.create_index(batch_op.f('ix_app_runs_group_key'), ['group_key'], unique=False)
    op.create_table('app_regressions',
                    sa.Column('id', sa.Integer(), nullable=False),
                    sa.Column('key', sa.String(length=40), nullable=False),
                    sa.Column('repository', sa.String(length=200), nullable=False),
                    sa.Column('installation_id', sa.BigInteger(), nullable=True),
                    sa.Column('benchmark', sa.Text(), nullable=False),
                    sa.Column('also', sa.Text(), nullable=True),
                    sa.Column('fingerprint', sa.String(length=32), nullable=True),
                    sa.Column('environment', sa.Text(), nullable=True),
                    sa.Column('runner', sa.String(length=64), nullable=True),
                    sa.Column('runs_on', sa.String(length=1100), nullable=True),
                    sa.Column('trigger', sa.String(length=32), nullable=False),
                    sa.Column('requested_by', sa.String(length=100), nullable=True),
                    sa.Column('good_sha', sa.String(length=64), nullable=False),
                    sa.Column('bad_sha', sa.String(length=64), nullable=False),
                    sa.Column('ratio', sa.Double(), nullable=True),
                    sa.Column('status', sa.String(length=16), nullable=False),
                    sa.Column('issue_number', sa.Integer(), nullable=True),
                    sa.Column('bisect_key', sa.String(length=40), nullable=True),
                    sa.Column('culprit_sha', sa.String(length=64), nullable=True),
                    sa.Column('culprit_pr', sa.Integer(), nullable=True),
                    sa.Column('outcome', sa.Text(), nullable=True),
                    sa.Column('closed_reason', sa.Text(), nullable=True),
                    sa.Column('notified_at', sa.DateTime(timezone=True), nullable=True),
                    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
                    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
                    sa.PrimaryKeyConstraint('id'),
                    sa.UniqueConstraint('key'))
    with op.batch_alter_table('app_regressions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_app_regressions_repository'), ['repository'], unique=False)
        batch_op.create_index(batch_op.f('ix_app_regressions_bisect_key'), ['bisect_key'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('app_regressions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_app_regressions_bisect_key'))
        batch_op.drop_index(batch_op.f('ix_app_regressions_repository'))
    op.drop_table('app_regressions')
    with op.batch_alter_table('app_runs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_app_runs_group_key'))
        batch_op.drop_column('group_key')
        batch_op.drop_column('runs_on')
        batch_op.drop_column('runner')
